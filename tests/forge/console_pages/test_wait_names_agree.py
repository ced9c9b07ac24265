"""The Gantt's live fold (run_attempts.js) names the engine's waits as the server's fold (attempts.py) does, so a
reply wait drawn live reads as it does after a reload."""

import re
from pathlib import Path

from engine.interpreter.state import Wait
from forge.runs.reads.attempts import WAIT_NAMES, WAIT_SAYS

SCRIPT = Path(__file__).resolve().parents[3] / "forge/console/static/console/run_attempts.js"


def test_the_page_and_the_server_name_every_wait_alike():
    table = re.search(r"const WAIT_NAMES = \{(.*?)\};", SCRIPT.read_text(), re.S)[1]
    in_js = dict(re.findall(r'(\w+): "([^"]+)"', table))
    assert in_js == {str(k): v for k, v in WAIT_NAMES.items()}
    engine_waits = {v for k, v in vars(Wait).items() if k.isupper()}
    assert engine_waits <= set(in_js) and in_js["reply"] == "reply" and "reply" in WAIT_SAYS
