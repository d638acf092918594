"""What recording costs per new workload: tiny transformers models, each test a fresh one.

In transformers' modeling tests almost every test builds a fresh tiny model (the configs of
their model testers) and calls it a few times, so each call is a new workload and what the
plugin adds per new top-level call sets the suite's ratio. For each model (bert, gpt2, llama,
t5; random init, nothing downloaded) this writes a pytest file of ``--tests`` tests, each
building a fresh model and calling it twice with fixed-shape random ids, and runs it in
subprocesses (``taskset -c 0``, torch on one thread), alternating ``-p no:workload`` and
``--workload-record=all --workload-timing=off`` (and that mode with ``--baseline DIR``'s
plugin, for a before/after table) over ``--rounds`` rounds. It prints, per model and mode, the
median time of the test loop (``pytest_runtestloop``, so interpreter start and imports are
left out), the added milliseconds per test against plugin-off, and the ratio of the whole
process's wall time.

Run: ``python benchmarks/new_workload_cost.py [--quick] [--baseline CHECKOUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, median, print_header

ROOT = Path(__file__).resolve().parent.parent

#: The model testers' tiny configs (transformers' tests/models/*/test_modeling_*.py).
MODELS = {
    "bert": (
        "BertModel",
        "BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=5, num_attention_heads=4,"
        " intermediate_size=37, max_position_embeddings=512, type_vocab_size=16)",
    ),
    "gpt2": (
        "GPT2Model",
        "GPT2Config(vocab_size=99, n_embd=32, n_layer=5, n_head=4, n_inner=37, n_positions=512)",
    ),
    "llama": (
        "LlamaModel",
        "LlamaConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,"
        " num_key_value_heads=4, intermediate_size=37, max_position_embeddings=512)",
    ),
    "t5": (
        "T5Model",
        "T5Config(vocab_size=99, d_model=32, d_ff=37, d_kv=8, num_layers=5, num_heads=4,"
        " relative_attention_num_buckets=8, decoder_start_token_id=0)",
    ),
}

TEST_FILE = """
import pytest
import torch
from transformers import {config_class}, {model_class}

@pytest.mark.parametrize("i", range({tests}))
def test_new_model(i):
    torch.manual_seed(i)
    model = {model_class}({config}).eval()
    ids = torch.randint(1, 99, (2, 7))
    with torch.no_grad():
        for _ in range(2):
            model({call})
"""

#: Writes the test loop's wall time to $LOOP_TIME_FILE.
CONFTEST = """
import os, time
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        with open(os.environ["LOOP_TIME_FILE"], "w") as f:
            f.write(str(time.perf_counter() - started))
"""

PLUGIN_ON = ["--workload-record=all", "--workload-timing=off"]


def write_suite(directory: Path, model: str, tests: int) -> None:
    model_class, config = MODELS[model]
    call = "input_ids=ids, decoder_input_ids=ids" if model == "t5" else "input_ids=ids"
    text = TEST_FILE.format(
        config_class=config.split("(")[0],
        model_class=model_class,
        config=config,
        tests=tests,
        call=call,
    )
    (directory / f"test_{model}.py").write_text(text)
    (directory / "conftest.py").write_text(CONFTEST)


def run(directory: Path, model: str, args: list[str], plugin_root: Path) -> tuple[float, float]:
    """One pytest process: (whole wall time, test loop time), in seconds."""
    loop_file = directory / "loop_time"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_root), os.environ.get("PYTHONPATH", "")]),
        "LOOP_TIME_FILE": str(loop_file),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    for stale in directory.glob("__workload*"):
        subprocess.run(["rm", "-rf", str(stale)], check=True)
    command = ["taskset", "-c", "0", sys.executable, "-m", "pytest", "-q", "-p", "no:xdist"]
    command += ["-p", "no:cacheprovider", f"test_{model}.py", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return wall, float(loop_file.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer tests and rounds")
    parser.add_argument("--tests", type=int, default=30, help="tests (fresh models) per file")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--baseline", help="another checkout whose plugin runs too (before)")
    options = parser.parse_args()
    if options.quick:
        options.tests, options.rounds = 10, 2
    modes: dict[str, tuple[list[str], Path]] = {
        "-p no:workload": (["-p", "no:workload"], ROOT),
        "record=all, timing off": (PLUGIN_ON, ROOT),
    }
    if options.baseline:
        modes["record=all, timing off (baseline)"] = (PLUGIN_ON, Path(options.baseline))
    print_header("Per new workload: tiny transformers models, a fresh one per test")
    print(f"{options.tests} tests a file (2 calls each), {options.rounds} rounds; "
          f"baseline: {options.baseline or 'none'}\n")  # fmt: skip
    rows = []
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in options.models.split(","):
            directory = Path(tmp) / model
            directory.mkdir()
            write_suite(directory, model, options.tests)
            times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
            for round_ in range(options.rounds):
                order = list(modes) if round_ % 2 == 0 else list(reversed(modes))
                for mode in order:
                    times[mode].append(run(directory, model, *modes[mode]))
            results[model] = times
            off_wall = median([w for w, _ in times["-p no:workload"]])
            off_loop = median([loop for _, loop in times["-p no:workload"]])
            for mode, samples in times.items():
                wall, loop = median([w for w, _ in samples]), median([lp for _, lp in samples])
                added = 1e3 * (loop - off_loop) / options.tests
                rows.append(
                    [model, mode, f"{loop:.2f} s", f"{wall:.2f} s", f"{added:+.1f} ms",
                     f"{loop / off_loop:.2f}x", f"{wall / off_wall:.2f}x"]
                )  # fmt: skip
            print(f"{model}: done", file=sys.stderr, flush=True)
    headers = ["model", "mode", "test loop", "wall", "added per test", "loop ratio", "wall ratio"]
    print(markdown_table(headers, rows))
    print("\nraw (wall, loop) seconds:", json.dumps(results))


if __name__ == "__main__":
    main()
