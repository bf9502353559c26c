"""nanoGPT's CPU "baby" run on TinyShakespeare at character level, in PyTorch: the reference that
tools/bench/shakespeare_baby.sh runs right after `nanoformer train` on the same threads.

The model, its initialisation, the optimizer groups and the learning rate are nanoGPT's
(karpathy/nanoGPT model.py and train.py with config/train_shakespeare_char.py and the README's CPU
overrides: --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000
--lr_decay_iters=2000 --dropout=0.0), written out here so that nothing is downloaded:
  - GPT: token + learned position embeddings, 4 pre-LayerNorm blocks (LayerNorm without bias,
    causal self-attention through F.scaled_dot_product_attention, MLP 4 d with exact GELU), a final
    LayerNorm, the head tied to the token embedding; no biases, no dropout;
  - init: normal(0, 0.02) for every Linear and Embedding, the residual projections (c_proj)
    normal(0, 0.02 / sqrt(2 n_layer));
  - AdamW(betas (0.9, 0.99), eps 1e-8), weight decay 0.1 on every parameter with >= 2 dims and 0 on
    the rest; gradient norm clipped to 1.0;
  - lr: linear warmup lr (it + 1) / (warmup + 1) for 100 steps, then cosine from 1e-3 to 1e-4 at
    step 2000 (nanoGPT's get_lr);
  - batches: random windows of 65 characters (torch.randint, seed 1337), fp32.
Two choices are nanoformer's, so that both runs are measured on exactly the same text:
  - the split: the last floor(0.1 N) characters are validation (nanoGPT's int(0.9 N) puts one more
    character there);
  - validation: the mean loss over fixed, non-overlapping windows of 65 characters of the
    validation part, window (i B + b) mod K in row b of batch i, over --eval-batches batches
    (nanoformer's validation batches; nanoGPT averages --eval_iters random batches instead).
    The default, 143 batches of 12, covers all 1715 windows.
The vocabulary is nanoGPT's: the sorted distinct characters of the whole file (65 for
TinyShakespeare), the same ids as `nanoformer tokenizer train --char`.

Usage (prints the validation loss every 250 steps, then one JSON line with the totals):
    .venv/bin/python tools/bench/shakespeare_char.py tinyshakespeare.txt --threads 2
"""
from __future__ import annotations

import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's; here without)."""

    def __init__(self, ndim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, bias: bool):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # softmax(q k^T / sqrt(hd) + causal) v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd: int, bias: bool):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, bias: bool):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int, bias: bool):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, bias) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's scaled residual projections
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]  # matrices and embeddings
        no_decay = [p for p in params if p.dim() < 2]  # LayerNorm gains
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=learning_rate, betas=betas)


def get_lr(it: int, a) -> float:
    """nanoGPT's get_lr: linear warmup, cosine decay to min_lr at lr_decay_iters."""
    if it < a.warmup:
        return a.lr * (it + 1) / (a.warmup + 1)
    if it > a.steps:
        return a.min_lr
    decay_ratio = (it - a.warmup) / (a.steps - a.warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # 1 -> 0
    return a.min_lr + coeff * (a.lr - a.min_lr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="the text file (TinyShakespeare's input.txt)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=12)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--eval-batches", type=int, default=143)
    p.add_argument("--seed", type=int, default=1337)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n_val = int(len(data) * 0.1)
    train_data, val_data = data[:len(data) - n_val], data[len(data) - n_val:]
    B, T = a.batch_size, a.context

    def train_batch():
        ix = torch.randint(len(train_data) - T, (B,))
        x = torch.stack([train_data[i:i + T] for i in ix])
        y = torch.stack([train_data[i + 1:i + 1 + T] for i in ix])
        return x, y

    windows = val_data[:(len(val_data) // (T + 1)) * (T + 1)].view(-1, T + 1)  # (K, T + 1), non-overlapping

    @torch.no_grad()
    def val_loss():
        model.eval()
        total, count = 0.0, 0
        for i in range(a.eval_batches):
            w = windows[torch.arange(i * B, (i + 1) * B) % len(windows)]
            total += model(w[:, :-1], w[:, 1:]).item() * w[:, 1:].numel()
            count += w[:, 1:].numel()
        model.train()
        return total / count

    model = GPT(len(chars), T, a.n_layer, a.n_head, a.n_embd, bias=False)
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = model.configure_optimizers(a.weight_decay, a.lr, (0.9, a.beta2))
    print(f"pytorch {torch.__version__}: {torch.get_num_threads()} threads, {n_params} parameters, "
          f"vocab {len(chars)}, train {len(train_data)} / val {len(val_data)} characters", flush=True)

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    val = float("nan")
    for it in range(a.steps):
        lr = get_lr(it, a)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = train_batch()
        loss = model(x, y)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step = it + 1
        if step % a.eval_every == 0 or step == a.steps:
            val = val_loss()
            print(f"step {step}: train loss {loss.item():.4f}, val loss {val:.4f}, "
                  f"{time.perf_counter() - start_wall:.1f} s", flush=True)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    tokens = a.steps * B * T
    print(json.dumps({"impl": "pytorch", "val_loss": round(val, 4), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                      "tokens_per_s": round(tokens / wall)}), flush=True)


if __name__ == "__main__":
    main()
