"""What every bubblewrap (``bwrap``) sandbox of the project shares: the host's programs and libraries
read-only, the few files of ``/etc`` a program needs, and, when the caller is root, the drop of uid, groups
and capabilities through util-linux's ``setpriv``. The agent's sandbox (``orchestrator.run.sandbox``) and a
twin container's exec sandbox (``orchestrator.twin.apiserver.podexec``) are built on it."""

from __future__ import annotations

import os
import shutil

# What of /etc a program needs: users and groups, name service, certificates, time zone, linker cache.
ETC = ("passwd", "group", "nsswitch.conf", "hosts", "localtime", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
       "ssl", "ca-certificates", "alternatives", "mime.types", "os-release")  # fmt: skip
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def system_binds() -> list[str]:
    """``bwrap`` arguments that show the host's system directories (read-only, symlinks kept as symlinks)
    and the files of ``ETC`` that exist, in an ``/etc`` of mode 0755 (no side effects)."""
    args: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def drop_privileges(uid: int) -> list[str]:
    """The ``setpriv`` prefix that runs a command as ``uid`` (and its group), with no supplementary group,
    no capability and no-new-privs: for a sandbox started by root, which has no user namespace."""
    setpriv = shutil.which("setpriv") or "setpriv"
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip
