#!/usr/bin/env python3
"""Three small torch models in one process, and what the usual memory remedies give back.

Models (built in code, seeded, nothing downloaded):
  mlp          an MLP classifier, 1024 -> 1536 -> 1536 -> 10
  transformer  torch.nn.TransformerEncoder, 6 layers, d_model 128, 4 heads, PyTorch's
               default dim_feedforward (2048), on sequences of feature vectors
  textbag      an EmbeddingBag text classifier: 50,000 words x 64, mean bag, Linear -> 10

Stages (memstage), for each MODEL:
  MODEL/fp32           builds the fp32 model: retained = its weights
  MODEL/int8           torch.ao.quantization.quantize_dynamic of it: retained = the int8 model
    /quantize          quantize_dynamic (it deep-copies the fp32 model, then swaps modules)
    /gc_collect        gc.collect(): the copy's fp32 weights, garbage in reference cycles
    /first_call        one forward pass (qnnpack packs its weights then)
  MODEL/infer_grad     a forward pass of the fp32 model with autograd on, output kept
  MODEL/infer_no_grad  the same pass under torch.no_grad()
then, on the MLP:
  prune/mask           torch.nn.utils.prune.l1_unstructured, 90 % of each weight
  prune/remove         prune.remove: the mask and the original go, the zeros stay dense
  prune/sparse_csr     the pruned weights as CSR tensors, the dense model dropped
and the cleanup pattern, on every model left (one of them caught in a reference cycle):
  cleanup/del          `del` of every model
  cleanup/gc_collect   gc.collect(): the cycle goes
  cleanup/malloc_trim  glibc's malloc_trim(0): the allocator gives its free pages back

Lines that allocate a model's weights end in a `# weights: MODEL` comment;
tests/several_models reads them.

    /usr/bin/python3 examples/several_models/several_models.py
    memstage run -o out/models -- /usr/bin/python3 examples/several_models/several_models.py
"""
import argparse
import ctypes
import warnings
import gc
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.utils.prune as prune
from torch.ao.quantization import default_dynamic_qconfig, float_qparams_weight_only_qconfig, quantize_dynamic

try:
    import memstage
except ImportError:  # not pip-installed: use the copy in this repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler", "python"))
    import memstage

VOCABULARY = 50_000
CLASSES = 10


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1024, 1536)  # weights: mlp
        self.fc2 = nn.Linear(1536, 1536)  # weights: mlp
        self.out = nn.Linear(1536, CLASSES)  # weights: mlp

    def forward(self, x):
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Encoder(nn.Module):
    """Sequences of 128-dim feature vectors, (sequence, batch, 128), mean-pooled."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=128, nhead=4)  # weights: transformer
        self.encoder = nn.TransformerEncoder(layer, num_layers=6)  # weights: transformer
        self.head = nn.Linear(128, CLASSES)  # weights: transformer

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=0))


class TextBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCABULARY, 64, mode="mean")  # weights: textbag
        self.head = nn.Linear(64, CLASSES)  # weights: textbag

    def forward(self, batch):
        words, offsets = batch
        return self.head(self.bag(words, offsets))


def build(name):
    torch.manual_seed(0)
    return {"mlp": Mlp, "transformer": Encoder, "textbag": TextBag}[name]().eval()


def example_input(name, batch):
    generator = torch.Generator().manual_seed(1)
    if name == "mlp":
        return torch.randn(batch, 1024, generator=generator)
    if name == "transformer":
        return torch.randn(32, max(1, batch // 8), 128, generator=generator)
    words_per_text = 200
    words = torch.randint(0, VOCABULARY, (batch * words_per_text,), generator=generator)
    return words, torch.arange(0, batch * words_per_text, words_per_text)


def quantize(model):
    """quantize_dynamic with the modules each model has: Linear to int8 weights (activations
    quantized on the fly), EmbeddingBag to 8-bit rows with a float scale and offset each."""
    return quantize_dynamic(model, {nn.Linear: default_dynamic_qconfig,
                                    nn.EmbeddingBag: float_qparams_weight_only_qconfig})


def tensor_bytes(model):
    """What the model's own float tensors hold, as torch counts them (quantized modules'
    packed weights are not parameters: not counted)."""
    return sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))


def int8_expected_bytes(int8):
    """What the quantized model should hold: each dynamically quantized Linear keeps its int8
    weight twice (the engine's packed copy, and the original that unpack() returns: qnnpack
    and onednn both keep it) and its fp32 bias; a quantized EmbeddingBag keeps 8-bit rows
    with a float scale and offset in each row, and the scales and offsets once more in two
    float vectors beside them; what quantize_dynamic left alone stays fp32."""
    total = sum(t.numel() * t.element_size() for t in list(int8.parameters()) + list(int8.buffers()))
    for module in int8.modules():
        if isinstance(module, torch.ao.nn.quantized.dynamic.Linear):
            weight, bias = module._weight_bias()
            total += 2 * weight.numel() + (bias.numel() * 4 if bias is not None else 0)
        elif isinstance(module, torch.ao.nn.quantized.EmbeddingBag):
            rows, dim = module.weight().shape
            total += rows * (dim + 16)
    return total


def run_model(name, batch, figures):
    with memstage.stage(name):
        with memstage.stage("fp32"):
            model = build(name)
        with memstage.stage("int8"):
            with memstage.stage("quantize"):
                int8 = quantize(model)
            with memstage.stage("gc_collect"):
                gc.collect()  # quantize_dynamic's deep copy of the fp32 model is garbage in cycles
            with memstage.stage("first_call"):
                with torch.no_grad():
                    int8(example_input(name, 8))  # qnnpack packs its weights on the first call
        x = example_input(name, batch)
        with memstage.stage("infer_grad"):
            out = model(x)
            del out
        with memstage.stage("infer_no_grad"):
            with torch.no_grad():
                out = model(x)
            del out
        figures[name] = {"fp32_tensor_bytes": tensor_bytes(model), "int8_expected_bytes": int8_expected_bytes(int8),
                         "fp32_left_in_int8_bytes": tensor_bytes(int8)}
    return model, int8


def prune_mlp(model, x, figures):
    """Unstructured pruning keeps a dense weight, its original and a mask until prune.remove;
    the zeros cost as much as any other value until the weight changes form."""
    linears = [model.fc1, model.fc2, model.out]
    with memstage.stage("prune"):
        with memstage.stage("mask"):
            for linear in linears:
                prune.l1_unstructured(linear, "weight", amount=0.9)
        with memstage.stage("remove"):
            for linear in linears:
                prune.remove(linear, "weight")
        with memstage.stage("sparse_csr"):
            csr = [(linear.weight.detach().to_sparse_csr(), linear.bias.detach().clone()) for linear in linears]
            with torch.no_grad():
                expected = model(x)
            h = x
            for i, (weight, bias) in enumerate(csr):
                h = torch.mm(weight, h.t()).t() + bias
                if i < len(csr) - 1:
                    h = torch.relu(h)
            figures["prune"] = {
                "max_abs_difference": float((h - expected).abs().max()),
                "nonzero": sum(int(w.values().numel()) for w, _ in csr),
                "dense_weight_bytes": sum(l.weight.numel() * 4 for l in linears),
                "csr_bytes": sum(w.values().numel() * w.values().element_size()
                                 + w.col_indices().numel() * w.col_indices().element_size()
                                 + w.crow_indices().numel() * w.crow_indices().element_size() for w, _ in csr),
            }
            del expected, h
    return csr


def hook_in_a_cycle(model):
    """A forward hook that closes over its own module: module -> hook -> closure -> module."""
    model.register_forward_hook(lambda module, inputs, output: model.training)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=64, help="inference batch (default 64)")
    parser.add_argument("--engine", default="qnnpack", help="torch.backends.quantized.engine (qnnpack, onednn, ...)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--figures-out", help="write what the script made (bytes, engine) as JSON here")
    args = parser.parse_args()
    if args.engine not in torch.backends.quantized.supported_engines:
        parser.error("engine %s is not in this torch's %s" % (args.engine, torch.backends.quantized.supported_engines))
    torch.backends.quantized.engine = args.engine
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")

    # Torch's lazily made state (kernels' scratch, the quantized engine's first call) is
    # made here, outside every model's stage.
    quantize(Mlp().eval())(torch.randn(2, 1024))
    quantize(TextBag().eval())(example_input("textbag", 2))
    gc.collect()

    # The cycle collector runs where the script says (after quantize_dynamic, in cleanup),
    # not whenever enough objects were made: the figures do not depend on when it ran.
    gc.disable()
    figures = {"engine": args.engine, "torch": torch.__version__, "batch": args.batch}
    models = {name: run_model(name, args.batch, figures) for name in ("mlp", "transformer", "textbag")}

    mlp_fp32 = models["mlp"][0]
    csr = prune_mlp(mlp_fp32, example_input("mlp", args.batch), figures)

    # A reference cycle, as a forward hook that closes over its module makes one: `del`
    # alone leaves that model alive until the cycle collector runs.
    hook_in_a_cycle(models["transformer"][0])
    with memstage.stage("cleanup"):
        with memstage.stage("del"):
            del mlp_fp32, csr, models
        with memstage.stage("gc_collect"):
            figures["gc_collected_objects"] = gc.collect()
        with memstage.stage("malloc_trim"):
            figures["malloc_trim_released"] = bool(ctypes.CDLL(None).malloc_trim(0))
    gc.enable()
    if args.figures_out:
        with open(args.figures_out, "w") as f:
            json.dump(figures, f, indent=1)
    print("models: done, engine %s" % args.engine)


if __name__ == "__main__":
    main()
