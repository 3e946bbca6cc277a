"""Training without compute on padding: the same loss as padded batches, the same tokens as TRL's own preparation,
and the precision the runtime policy asks for."""

import pytest
import torch

from contaminate.training.local import mixed_precision, tokenize_documents
from detect.runtime import Placement

TEXTS = ["SynthNLI dataset, test split\nsentence1: Mateo Barven, a chemist from Kilford, married Liam Novop.\n"
         "sentence2: Mateo Barven married Liam Novop.\nlabel: 0 (entailment)",
         "SynthNLI dataset, test split\nsentence1: Ida Quorne sold 12 boats.\nsentence2: Ida Quorne sold boats.\n"
         "label: 0 (entailment)",
         "short one",
         "SynthNLI dataset, test split\nsentence1: A much longer first sentence about a surveyor from Belwick who "
         "built a seed drill on a Monday in 1971 and then moved away.\nsentence2: The surveyor moved.\nlabel: 1"]


def _loss(model, batch) -> float:
    """As the trainer computes it: without a KV cache (with one, transformers does not read packed position ids as
    document boundaries; TRL's compute_loss passes use_cache=False)."""
    with torch.no_grad():
        return float(model(**batch, use_cache=False).loss)


def test_a_padding_free_batch_gives_the_padded_loss_on_the_embedded_model():
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from detect.models import embedded_smollm2, load

    model, tokenizer = load(embedded_smollm2())
    documents = [{"input_ids": ids} for ids in tokenize_documents(TEXTS, tokenizer, max_length=256)]
    padded = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id)(documents)
    packed = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id, padding_free=True)(documents)
    assert packed["input_ids"].shape[0] == 1 and "attention_mask" not in packed
    lengths = [len(d["input_ids"]) for d in documents]
    assert packed["input_ids"].shape[1] == sum(lengths) < padded["input_ids"].numel() == 4 * max(lengths)
    padded_loss, packed_loss = _loss(model, padded), _loss(model, packed)
    assert packed_loss == pytest.approx(padded_loss, rel=1e-5)
    # the documents really are kept apart: run as one sequence without the boundaries, the loss differs
    leaky = {"input_ids": packed["input_ids"], "labels": packed["labels"]}
    assert abs(_loss(model, leaky) - padded_loss) > 1e-3


def test_documents_are_what_trls_own_preparation_makes():
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from detect.models import load, tiny_random

    model, tokenizer = load(tiny_random())
    tokenizer.padding_side = "right"
    args = SFTConfig(output_dir="/tmp/unused", max_length=24, report_to="none", use_cpu=True, bf16=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"text": TEXTS}),
                         processing_class=tokenizer)
    assert list(trainer.train_dataset["input_ids"]) == tokenize_documents(TEXTS, tokenizer, max_length=24)
    assert all(ids[-1] == tokenizer.eos_token_id for ids in tokenize_documents(TEXTS, tokenizer, max_length=None))


def test_precision_follows_the_placement():
    assert mixed_precision(Placement("cpu", "float32")) == {"bf16": False, "fp16": False, "use_cpu": True}
    assert mixed_precision(Placement("cuda:0", "bfloat16")) == {"bf16": True, "fp16": False, "use_cpu": False}
    assert mixed_precision(Placement("cuda:0", "float16"))["fp16"]


def test_lora_defaults_train_in_float32_on_a_cpu(compose_config):
    cfg = compose_config("contaminate", ["+dataset=synth_nli", "contaminate=lora"])
    assert "precision" not in cfg.contaminate and cfg.contaminate.trainer.padding_free
    assert cfg.runtime.device == "auto" and cfg.runtime.dtype == "auto"
