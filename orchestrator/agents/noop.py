"""The agent that does nothing: the baseline of the degradation level (docs/metrics.md)."""

from __future__ import annotations

import logging
import sys

from orchestrator.agents.inputs import AgentEnv, run_main


def main() -> int:
    return run_main(_main)


def _main() -> int:
    env = AgentEnv.from_env()
    logging.getLogger("orchestrator.agents.noop").info("invocation %d: doing nothing", env.invocation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
