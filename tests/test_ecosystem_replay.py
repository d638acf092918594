"""Hugging Face inputs are copied for a replay and replay intact: caches (``DynamicCache``,
``EncoderDecoderCache``) by their tensors, put back after every replayed call so that each
computes what the test's call computed; ``ModelOutput`` inputs with their type. Tiny configs,
built here: nothing is downloaded."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._perf.first_call import copy_inputs
from pytest_workload._perf.stopwatch import TimingPolicy

transformers = pytest.importorskip("transformers")

POLICY = TimingPolicy(budget_s=0.01)
SMALL = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2)


def _ids(length: int) -> torch.Tensor:
    return torch.randint(0, 50, (1, length))


def gpt2() -> nn.Module:
    config = transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=2, n_head=2)
    return transformers.GPT2LMHeadModel(config).eval()


def llama() -> nn.Module:
    config = transformers.LlamaConfig(**SMALL, intermediate_size=24, num_key_value_heads=1)
    return transformers.LlamaForCausalLM(config).eval()


def bert() -> nn.Module:
    return transformers.BertModel(transformers.BertConfig(**SMALL, intermediate_size=24)).eval()


def t5() -> nn.Module:
    config = transformers.T5Config(
        vocab_size=50, d_model=16, d_kv=8, d_ff=24, num_layers=2, num_heads=2,
        decoder_start_token_id=0, pad_token_id=0,
    )  # fmt: skip
    return transformers.T5ForConditionalGeneration(config).eval()


def _measured(test):
    """The workloads of ``test()``, replayed for timing, and the report lines."""
    recorder = WorkloadRecorder("t")
    with recorder.recording(all_roots=True):
        test()
    lines = recorder.measure(POLICY)
    return recorder.workloads().roots(), lines


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_a_dynamic_cache_is_copied_by_its_tensors(grad):
    model = gpt2()
    with torch.set_grad_enabled(grad):
        cache = model(_ids(5), use_cache=True).past_key_values
    copied, missing = copy_inputs(cache)
    assert not missing and type(copied) is type(cache) and copied.get_seq_length() == 5
    for mine, theirs in zip(copied.layers, cache.layers, strict=True):
        assert mine.keys is not theirs.keys and torch.equal(mine.keys, theirs.keys)
        assert mine.keys.is_leaf and mine.keys.requires_grad == theirs.keys.requires_grad == grad
    copied.update(torch.rand(1, 2, 1, 8), torch.rand(1, 2, 1, 8), 0)
    assert cache.get_seq_length() == 5  # the copy is the replay's own


def test_a_model_output_is_copied_with_its_type():
    output = transformers.modeling_outputs.BaseModelOutput(last_hidden_state=torch.rand(1, 3, 4))
    copied, missing = copy_inputs(output)
    assert not missing and type(copied) is type(output)
    assert copied[0] is copied.last_hidden_state and copied[0] is not output[0]
    assert torch.equal(copied[0], output[0]) and list(copied) == ["last_hidden_state"]


LENGTHS: list[int] = []


class Decoder(nn.Module):
    """A decoding step that logs the cache length each of its calls sees."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, cache: object) -> torch.Tensor:
        LENGTHS.append(cache.get_seq_length())
        return self.model(ids, past_key_values=cache, use_cache=True).logits


@pytest.mark.parametrize("build", [gpt2, llama])
def test_every_replayed_call_sees_the_cache_the_test_passed(build):
    step = Decoder(build())
    LENGTHS.clear()
    with torch.no_grad():
        cache = step.model(_ids(7), use_cache=True).past_key_values
        (w,), lines = _measured(lambda: step(_ids(1), cache))
    assert lines == [] and w.measured.timing.kind == "replayed" and w.timing.n >= 5
    assert len(LENGTHS) > 7 and set(LENGTHS) == {7}  # the test's call, then the replay's
    assert cache.get_seq_length() == 8  # grown by the test's own call only


def test_decoding_with_a_dynamic_cache_is_replayed():
    model = llama()

    def test():
        cache = transformers.DynamicCache(config=model.config)
        with torch.no_grad():
            model(_ids(4), past_key_values=cache, use_cache=True)
            model(_ids(1), past_key_values=cache, use_cache=True)

    roots, lines = _measured(test)
    assert lines == [] and len(roots) == 2
    assert all(w.measured.timing.kind == "replayed" and w.timing is not None for w in roots)


def test_t5_with_encoder_outputs_and_an_encoder_decoder_cache_is_replayed():
    model = t5()

    def test():
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=_ids(5))
            out = model(encoder_outputs=encoded, decoder_input_ids=_ids(2), use_cache=True)
            assert type(out.past_key_values).__name__ == "EncoderDecoderCache"
            model(
                encoder_outputs=encoded,
                decoder_input_ids=_ids(1),
                past_key_values=out.past_key_values,
            )

    roots, lines = _measured(test)
    assert lines == [] and len(roots) == 3  # the encoder, then two decoder calls
    assert all(w.measured.timing.kind == "replayed" and w.timing is not None for w in roots)


def test_a_bert_training_step_is_replayed():
    model = bert().train()

    def test():
        model(_ids(6)).last_hidden_state.mean().backward()

    (w,), lines = _measured(test)
    assert lines == [] and w.measured.timing.kind == "replayed" and w.flops > 0
