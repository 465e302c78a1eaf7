"""examples/train_mlp.py runs end to end and its loss goes down."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_train_mlp_example_loss_decreases():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "train_mlp.py")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    losses = [float(v) for v in re.findall(r"loss ([0-9.eE+-]+)", out.stdout)]
    assert len(losses) >= 5, out.stdout
    assert losses[-1] < 0.2 * losses[0], out.stdout
    assert all(b <= a * 1.05 for a, b in zip(losses, losses[1:], strict=False)), out.stdout
