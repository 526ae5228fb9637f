#!/usr/bin/env python3
"""Writes a small llama-architecture GGUF with random weights (seeded, so the
same file every time): the LC workload's model for llama-server in the guest.
It has no knowledge and no chat template; it exists so that every request does
the same, known amount of real inference work. Run inside the guest image
(python3-gguf needs sid's glibc).

  make_model.py OUT.gguf [--embd 64] [--layers 2] [--heads 2] [--ff 128] [--ctx 4096]

The defaults make a request of a short prompt and 16 tokens cost tens of
milliseconds in the TCG guest (about 3.4 ms a token), like a small model's
request on real hardware; the image build writes it to
/opt/akts/models/random-llama.gguf (vm/build_image.sh).
"""
import argparse

import numpy as np
import gguf


def vocab():
    # SentencePiece-style: <unk>, <s>, </s>, the 256 byte-fallback tokens, then
    # a few hundred plain pieces, so any prompt tokenizes.
    tokens, scores, types = [], [], []

    def add(text, score, kind):
        tokens.append(text.encode("utf-8"))
        scores.append(score)
        types.append(kind)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    add("<s>", 0.0, gguf.TokenType.CONTROL)
    add("</s>", 0.0, gguf.TokenType.CONTROL)
    for b in range(256):
        add("<0x%02X>" % b, 0.0, gguf.TokenType.BYTE)
    pieces = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["\u2581" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += [chr(c) for c in range(ord("0"), ord("9") + 1)] + [".", ",", ":", "?", "!", "-"]
    # Whole words, reachable by SentencePiece merges through every prefix, so a
    # prompt costs about a token a word rather than a token a byte.
    words = ("the of and to in is that for it as with was on be by this are or at from have an not but "
             "slot slots policy policies latency throughput objective wait waits oldest batch share cpu pressure "
             "requests request flight running now answer number only pick when maximise then none ended lc be "
             "default built selected empty tasks task short long work critical best effort vtime fifo fair "
             "hello there what which server model prompt tokens").split()
    seen = set(pieces)
    for w in words:
        for n in range(1, len(w) + 1):
            piece = "\u2581" + w[:n]
            if piece not in seen:
                seen.add(piece)
                pieces.append(piece)
    for i, p in enumerate(pieces):
        add(p, -float(i), gguf.TokenType.NORMAL)
    return tokens, scores, types


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    tokens, scores, types = vocab()
    n_vocab, n_embd, n_ff = len(tokens), a.embd, a.ff

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("akts random llama (random weights, for load only)")
    w.add_context_length(a.ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.heads)
    w.add_rope_dimension_count(n_embd // a.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(n_vocab, n_embd))
    for i in range(a.layers):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", mat(n_embd, n_embd))
        w.add_tensor(p + "attn_k.weight", mat(n_embd, n_embd))
        w.add_tensor(p + "attn_v.weight", mat(n_embd, n_embd))
        w.add_tensor(p + "attn_output.weight", mat(n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", mat(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", mat(n_embd, n_ff))
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", mat(n_vocab, n_embd))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s: llama, %d layers, %d embd, %d heads, %d ff, %d vocab" % (a.out, a.layers, n_embd, a.heads, n_ff,
                                                                           n_vocab))


if __name__ == "__main__":
    main()
