"""Tiny GGUF models built here for plumbing tests (tests cannot download a real one): random
weights, the right layout, so that llama.cpp loads them and runs them as it would a real one."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

WORDS = ["the", "boiler", "is", "serviced", "in", "october", "by", "dana", "who", "services",
         "tea", "cat", "likes", "my", "?", "."]  # fmt: skip


def bert_reranker(path: Path, *, seed: int = 7, width: int = 32, inner: int = 64) -> Path:
    """A one-layer BERT cross-encoder with rank pooling (one score per query and text), as
    llama.cpp's converter writes a BGE re-ranker: a WordPiece vocabulary whose words start
    with "▁", and the classifier head in ``cls`` and ``cls.output``."""
    return _bert(path, gguf.PoolingType.RANK, seed=seed, width=width, inner=inner)


def bert_embedder(path: Path, *, seed: int = 11, width: int = 24, inner: int = 48) -> Path:
    """A one-layer BERT sentence embedder with mean pooling (one vector per text), as llama.cpp's
    converter writes all-MiniLM or BGE-small: ``width`` dimensions."""
    return _bert(path, gguf.PoolingType.MEAN, seed=seed, width=width, inner=inner)


def _bert(path: Path, pooling: gguf.PoolingType, *, seed: int, width: int, inner: int) -> Path:
    rng = np.random.default_rng(seed)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *("▁" + word for word in WORDS)]
    context = 512
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name(f"tiny test BERT ({pooling.name.lower()} pooling)")
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_feed_forward_length(inner)
    writer.add_block_count(1)
    writer.add_head_count(2)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_token_type_count(2)
    writer.add_pooling_type(pooling)
    writer.add_file_type(0)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.NORMAL] * len(WORDS))
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(3)
    writer.add_sep_token_id(3)
    writer.add_unk_token_id(1)
    writer.add_pad_token_id(0)

    def random(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.2).astype(np.float32))

    def norm(name: str) -> None:
        writer.add_tensor(f"{name}.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"{name}.bias", np.zeros(width, dtype=np.float32))

    random("token_embd.weight", len(tokens), width)
    random("token_types.weight", 2, width)
    random("position_embd.weight", context, width)
    norm("token_embd_norm")
    for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
        random(f"blk.0.{part}.weight", width, width)
        random(f"blk.0.{part}.bias", width)
    norm("blk.0.attn_output_norm")
    random("blk.0.ffn_up.weight", inner, width)
    random("blk.0.ffn_up.bias", inner)
    random("blk.0.ffn_down.weight", width, inner)
    random("blk.0.ffn_down.bias", width)
    norm("blk.0.layer_output_norm")
    if pooling == gguf.PoolingType.RANK:  # the classifier head
        random("cls.weight", width, width)
        random("cls.bias", width)
        random("cls.output.weight", 1, width)
        random("cls.output.bias", 1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
