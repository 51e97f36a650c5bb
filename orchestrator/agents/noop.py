"""The agent that does nothing: the baseline of the degradation level (METRICS.md)."""

from __future__ import annotations

import logging
import sys

from orchestrator.agents.inputs import AgentEnv, setup_logging


def main() -> int:
    setup_logging()
    env = AgentEnv.from_env()
    logging.getLogger("orchestrator.agents.noop").info("invocation %d: doing nothing", env.invocation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
