"""Trivial ONNX graphs for bench/ort-fixed-cost.ts: onnxruntime's cost per run by number of
inputs, outputs and nodes, with no math to speak of. Usage: python3 bench/ort-trivial-graphs.py DIR"""
import sys

import onnx
from onnx import TensorProto, helper

folder = sys.argv[1]


def tensor(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4, "p", 8])


def save(nodes, inputs, outputs, name):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, f"{folder}/{name}.onnx")


for n in [1, 12, 24]:
    # n inputs summed into one output; one input copied to n outputs
    save([helper.make_node("Sum", [f"in{i}" for i in range(n)], ["out0"])], [tensor(f"in{i}") for i in range(n)], [tensor("out0")], f"in{n:02d}_out01")
    save([helper.make_node("Relu", ["in0"], [f"out{i}"]) for i in range(n)], [tensor("in0")], [tensor(f"out{i}") for i in range(n)], f"in01_out{n:02d}")
for k in [10, 50, 150]:
    # one input, a chain of k unary nodes, one output
    nodes = [helper.make_node("Relu" if j % 2 == 0 else "Neg", ["in0" if j == 0 else f"t{j - 1}"], ["out0" if j == k - 1 else f"t{j}"]) for j in range(k)]
    save(nodes, [tensor("in0")], [tensor("out0")], f"chain{k:03d}")
