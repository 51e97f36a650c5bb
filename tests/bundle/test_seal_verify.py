from __future__ import annotations

import json
import random
import shutil
import tarfile
from pathlib import Path

import pytest

from orchestrator.bundle.building import sample_manifest, write_bundle
from orchestrator.bundle.journal import encode_line, sha256_hex
from orchestrator.bundle.records import AlertRecord, Intervention, Record, ServiceSample
from orchestrator.bundle.seal import pack_bundle, seal_bundle, write_signing_key
from orchestrator.bundle.verify import verify_bundle
from orchestrator.errors import BundleError
from tests.api.bundles import extract
from tests.bundle.commandline import run_command


def _records() -> list[Record]:
    records: list[Record] = [sample_manifest()]
    records += [
        AlertRecord(
            alert_id=f"a{n}",
            rule="HighLatency",
            labels={"namespace": "boutique", "service": "cart"},
            starts_at=10.0 * n,
        )
        for n in range(4)
    ]
    records += [ServiceSample(t=60.0 * n, q=4.0, e=0.0, l=0.1) for n in range(3)]
    records.append(Intervention(t=30.0, tool="rollback", targets=["cart"], incident_id="INC-1", result="ok"))
    return records


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "signing.pem"
    write_signing_key(path)
    return path


@pytest.fixture
def sealed(tmp_path: Path, key: Path) -> Path:
    return write_bundle(tmp_path / "bundle", _records(), signing_key=key, runtime={"host": "h"})


def _problems(bundle: Path) -> list[str]:
    return [str(finding) for finding in verify_bundle(bundle).findings]


def test_an_untouched_bundle_verifies_and_the_command_exits_0(
    sealed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _problems(sealed) == []
    assert run_command("orchestrator.bundle.commands", ["bundle", "verify", str(sealed)]) == 0
    assert "signature ok" in capsys.readouterr().out


@pytest.mark.parametrize("signed", [True, False])
def test_flipping_one_byte_anywhere_fails_verification_and_names_the_file(
    tmp_path: Path, key: Path, signed: bool
) -> None:
    sealed = write_bundle(tmp_path / "bundle", _records(), signing_key=key if signed else None)
    files = sorted(p for p in sealed.rglob("*") if p.is_file())
    rng = random.Random(7)
    for path in files:
        size = path.stat().st_size
        for offset in sorted({0, size // 2, size - 1, rng.randrange(size)}):
            copy = tmp_path / "copy"
            shutil.copytree(sealed, copy)
            target = copy / path.relative_to(sealed)
            data = bytearray(target.read_bytes())
            data[offset] ^= 0x01
            target.write_bytes(bytes(data))
            problems = _problems(copy)
            name = path.relative_to(sealed).as_posix()
            assert problems, f"flip at {name}:{offset} went unnoticed"
            assert any(name in problem for problem in problems), (name, offset, problems)
            shutil.rmtree(copy)


def test_the_verify_command_exits_1_and_names_the_changed_file(
    sealed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = sealed / "data" / "service.jsonl"
    stream.write_bytes(stream.read_bytes().replace(b'"q":4.0', b'"q":5.0', 1))
    assert run_command("orchestrator.bundle.commands", ["bundle", "verify", str(sealed)]) == 1
    err = capsys.readouterr().err
    assert "data/service.jsonl: content changed" in err
    assert "data/service.jsonl: line 2: does not chain to line 1" in err


def test_deleting_a_record_in_the_middle_breaks_the_chain_at_that_line(sealed: Path) -> None:
    stream = sealed / "data" / "alerts.jsonl"
    lines = stream.read_bytes().splitlines(keepends=True)
    stream.write_bytes(b"".join(lines[:1] + lines[2:]))
    problems = _problems(sealed)
    assert (
        "data/alerts.jsonl: line 2: does not chain to line 1 (a record was altered, deleted or inserted "
        "before it)" in problems
    )
    assert "data/alerts.jsonl: 3 records but 4 were sealed (records deleted)" in problems


def test_deleting_the_last_record_is_caught_by_the_sealed_chain_head(sealed: Path) -> None:
    stream = sealed / "data" / "alerts.jsonl"
    lines = stream.read_bytes().splitlines(keepends=True)
    stream.write_bytes(b"".join(lines[:-1]))
    assert "data/alerts.jsonl: 3 records but 4 were sealed (records deleted)" in _problems(sealed)


def test_appending_a_correctly_chained_record_is_caught(sealed: Path) -> None:
    stream = sealed / "data" / "alerts.jsonl"
    last = stream.read_bytes().splitlines()[-1]
    extra = AlertRecord(alert_id="a9", rule="HighLatency", labels={}, starts_at=99.0)
    stream.write_bytes(stream.read_bytes() + encode_line(extra, sha256_hex(last)) + b"\n")
    problems = _problems(sealed)
    assert "data/alerts.jsonl: 5 records but 4 were sealed (records appended)" in problems
    assert "data/alerts.jsonl: content changed (SHA-256 differs from the manifest)" in problems


def test_extra_files_in_the_payload_or_beside_it_are_named(sealed: Path) -> None:
    (sealed / "data" / "notes.txt").write_text("x")
    (sealed / "README").write_text("x")
    problems = _problems(sealed)
    assert "data/notes.txt: extra file not listed in the manifest" in problems
    assert "README: extra tag file not listed in tagmanifest-sha256.txt" in problems


def test_a_removed_stream_is_named(sealed: Path) -> None:
    (sealed / "data" / "agent.jsonl").unlink()
    problems = _problems(sealed)
    assert "data/agent.jsonl: stream missing" in problems
    assert "data/agent.jsonl: listed in the manifest but missing" in problems


def test_a_signature_made_with_another_key_fails(sealed: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.pem"
    write_signing_key(other)
    unrelated = tmp_path / "unrelated"
    write_bundle(unrelated, _records(), signing_key=other)
    shutil.copy(unrelated / "tagmanifest-sha256.txt.sig", sealed / "tagmanifest-sha256.txt.sig")
    assert any("tagmanifest-sha256.txt.sig: signature does not match" in p for p in _problems(sealed))


def test_a_trusted_public_key_catches_a_re_signed_bundle(sealed: Path, tmp_path: Path, key: Path) -> None:
    trusted = tmp_path / "trusted.pub"
    trusted.write_bytes((sealed / "signature-ed25519.pub").read_bytes())
    forged = tmp_path / "forged"
    write_bundle(forged, _records(), signing_key=_new_key(tmp_path / "forger.pem"))
    assert verify_bundle(forged).ok  # self-consistent on its own ...
    assert not verify_bundle(forged, public_key=trusted).ok  # ... but not signed by the trusted key
    assert verify_bundle(sealed, public_key=trusted).ok


def _new_key(path: Path) -> Path:
    write_signing_key(path)
    return path


def test_an_unsealed_directory_does_not_verify(tmp_path: Path) -> None:
    write_bundle(tmp_path / "open", _records(), seal=False)
    assert _problems(tmp_path / "open") == [f"{tmp_path / 'open'}: not a sealed bundle (no bagit.txt)"]


def test_sealing_refuses_a_journal_with_a_cut_record(tmp_path: Path) -> None:
    journal = write_bundle(tmp_path / "cut", _records(), seal=False)
    with (journal / "alerts.jsonl").open("ab") as handle:
        handle.write(b'{"kind":"alert"')
    with pytest.raises(BundleError, match="unterminated record"):
        seal_bundle(journal)


def test_bag_info_names_the_run(sealed: Path) -> None:
    info = (sealed / "bag-info.txt").read_text()
    for line in ("Run-Id: run-0001", "App: online-boutique", "Seed: 42", "Code-Version: 0.1.0"):
        assert line in info
    heads = json.loads((sealed / "chain-heads.json").read_text())
    assert heads["alerts.jsonl"]["records"] == 4


@pytest.mark.parametrize("suffix", [".tar.zst", ".tar.gz"])
def test_packing_is_deterministic_and_unpacks_to_a_verifiable_bundle(tmp_path: Path, suffix: str) -> None:
    one = write_bundle(tmp_path / "a" / "bundle", _records())
    two = write_bundle(tmp_path / "b" / "bundle", _records())
    first, second = tmp_path / f"one{suffix}", tmp_path / f"two{suffix}"
    assert run_command("orchestrator.bundle.commands", ["bundle", "pack", str(one), "-o", str(first)]) == 0
    pack_bundle(two, second)
    assert first.read_bytes() == second.read_bytes()
    unpacked = tmp_path / "unpacked"
    if suffix == ".tar.zst":
        import zstandard

        raw = tmp_path / "raw.tar"
        raw.write_bytes(zstandard.ZstdDecompressor().decompress(first.read_bytes()))
        first = raw
    with tarfile.open(first) as archive:
        extract(archive, unpacked)
    assert verify_bundle(unpacked / "bundle").ok
