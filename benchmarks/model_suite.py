"""What switching the plugin on costs an unedited model suite: plugin off against on, side by side.

A suite of tests written here the way model zoos write theirs (each test builds a tiny model
with ``weights=None`` or a small config and calls it a few times; no downloads) runs in a
scratch directory, several ways, alternated within every round:

- ``off``: ``-p no:workload``, the reference;
- ``all, timing off``: ``--workload-record=all --workload-timing=off``;
- ``all``: ``--workload-record=all`` (timing on);
- ``all, snapshot update``: ``--workload-record=all --workload-snapshot --snapshot-update``;
- ``marked``: the same tests each marked ``@pytest.mark.workloads`` (replayed for timing).

Two suites: ``hf`` (Hugging Face bert, gpt2, llama and t5 with tiny configs: forwards, calls
with ``past_key_values`` caches, T5 with ``encoder_outputs``, a training step) and ``vision``
(torchvision classifiers at 64x64). Outcomes must agree with the reference test by test. The
table gives the median wall time of each and its ratio to ``off``; the JSON report of the
``all`` run says how each workload was timed.

Run: ``python benchmarks/model_suite.py [--suite hf|vision|both] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, median, print_header

HF_TESTS = """\
import pytest
import torch
import transformers as tf

torch.manual_seed(0)
SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37)


def bert():
    return tf.BertModel(tf.BertConfig(**SMALL)).eval()


def gpt2():
    return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4)).eval()


def llama():
    cfg = tf.LlamaConfig(**SMALL, num_key_value_heads=2)
    return tf.LlamaForCausalLM(cfg).eval()


def t5():
    cfg = tf.T5Config(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                      decoder_start_token_id=0, pad_token_id=0)
    return tf.T5ForConditionalGeneration(cfg).eval()


def ids(batch=2, length=7):
    return torch.randint(0, 99, (batch, length))


@pytest.mark.parametrize("length", [5, 9])
@pytest.mark.parametrize("build", [bert, gpt2, llama])
def test_forward(build, length):
    model = build()
    with torch.no_grad():
        first = model(ids(length=length))
        again = model(ids(length=length))
    assert first[0].shape == again[0].shape


@pytest.mark.parametrize("build", [gpt2, llama])
def test_decode_with_cache(build):
    model = build()
    with torch.no_grad():
        out = model(ids(), use_cache=True)
        cache = out.past_key_values
        for _ in range(3):
            out = model(ids(length=1), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
    assert cache.get_seq_length() == 10


@pytest.mark.parametrize("build", [gpt2, llama])
def test_explicit_dynamic_cache(build):
    model = build()
    cache = tf.DynamicCache(config=model.config)
    with torch.no_grad():
        model(ids(), past_key_values=cache, use_cache=True)
        model(ids(length=1), past_key_values=cache, use_cache=True)
    assert cache.get_seq_length() == 8


def test_t5_forward():
    model = t5()
    with torch.no_grad():
        out = model(input_ids=ids(), decoder_input_ids=ids(length=3))
    assert out.logits.shape == (2, 3, 99)


def test_t5_encoder_outputs_and_cache():
    model = t5()
    with torch.no_grad():
        enc = model.get_encoder()(input_ids=ids())
        out = model(encoder_outputs=enc, decoder_input_ids=ids(length=3), use_cache=True)
        out = model(encoder_outputs=enc, decoder_input_ids=ids(length=1),
                    past_key_values=out.past_key_values, use_cache=True)
    assert out.past_key_values.get_seq_length() == 4


@pytest.mark.parametrize("build", [bert, gpt2, llama, t5])
def test_training_step(build):
    model = build().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        x = ids()
        if build is t5:
            loss = model(input_ids=x, labels=x).loss
        elif build is bert:
            loss = model(x).last_hidden_state.mean()
        else:
            loss = model(x, labels=x).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss)
"""

VISION_TESTS = """\
import pytest
import torch
import torchvision

torch.manual_seed(0)
NAMES = ["resnet18", "mobilenet_v3_small", "squeezenet1_0", "shufflenet_v2_x0_5",
         "mnasnet0_5", "regnet_y_400mf", "efficientnet_b0", "densenet121"]


@pytest.mark.parametrize("name", NAMES)
def test_classifier(name):
    model = torchvision.models.get_model(name, weights=None, num_classes=10).eval()
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        out = model(x)
        assert torch.allclose(model(x), out, atol=1e-5)
    assert out.shape == (2, 10)


@pytest.mark.parametrize("name", NAMES[:4])
def test_train_mode(name):
    model = torchvision.models.get_model(name, weights=None, num_classes=10).train()
    model(torch.rand(2, 3, 64, 64)).sum().backward()
"""

SUITES = {"hf": HF_TESTS, "vision": VISION_TESTS}
ALL = ("--workload-record=all",)
SIDES = {
    "off": ("-p", "no:workload"),
    "all, timing off": (*ALL, "--workload-timing=off"),
    "all": (*ALL, "--workload-json=report.json"),
    "all, snapshot update": (*ALL, "--workload-snapshot", "--snapshot-update"),
    "marked": ("--workload-json=marked.json",),
}


def _marked(source: str) -> str:
    """Every test of ``source`` marked, so that it replays."""
    return source.replace("\ndef test_", "\n@pytest.mark.workloads\ndef test_")


def _outcomes(junit: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    return outcomes


def _run(cwd: Path, name: str, side: str) -> tuple[float, dict[str, str]]:
    test = "test_marked.py" if side == "marked" else "test_suite.py"
    junit = cwd / f"junit-{name}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += [*SIDES[side], f"--junitxml={junit}", test]
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=False, capture_output=True)
    elapsed = time.perf_counter() - started
    outcomes = {k.replace("test_marked", "test_suite"): v for k, v in _outcomes(junit).items()}
    return elapsed, outcomes


def _how_timed(report: Path) -> collections.Counter[str]:
    data = json.loads(report.read_text())
    return collections.Counter(
        w["measured"]["timing"].split(":")[0].split(" (")[0]
        for test in data["tests"]
        for w in test["workloads"]
        if w.get("caller") is None and w.get("measured")
    )


def run_suite(suite: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix=f"workload-{suite}-suite-") as tmp:
        cwd = Path(tmp)
        (cwd / "pytest.ini").write_text("[pytest]\nmarkers =\n    workloads: recorded\n")
        (cwd / "test_suite.py").write_text(SUITES[suite])
        (cwd / "test_marked.py").write_text(_marked(SUITES[suite]))
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        reference: dict[str, str] = {}
        differs: list[str] = []
        for r in range(rounds):
            order = list(SIDES)
            order = order[r % len(order) :] + order[: r % len(order)]
            for side in order:
                elapsed, outcomes = _run(cwd, f"{side}-{r}", side)
                times[side].append(elapsed)
                if side == "off" and not reference:
                    reference = outcomes
                elif reference and outcomes != reference:
                    differs.append(side)
        how = {name: _how_timed(cwd / name) for name in ("report.json", "marked.json")}
    print_header(f"Suite `{suite}`: plugin off against on")
    passed = sum(1 for v in reference.values() if v == "passed")
    print(f"{len(reference)} tests ({passed} passed with the plugin off), {rounds} rounds.\n")
    off = median(times["off"])
    rows = [
        [side, f"{median(t):.2f} s", f"{median(t) / off:.2f}x", " ".join(f"{x:.1f}" for x in t)]
        for side, t in times.items()
    ]
    print(markdown_table(["side", "median wall", "vs off", "each round (s)"], rows))
    print(f"\noutcomes that differ from `off`: {sorted(set(differs)) or 'none'}")
    for name, counts in how.items():
        print(f"top-level workloads by timing, {name}: {dict(counts)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=("hf", "vision", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for suite in ("hf", "vision") if args.suite == "both" else (args.suite,):
        run_suite(suite, args.rounds)


if __name__ == "__main__":
    main()
