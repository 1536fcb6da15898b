"""A safe arithmetic evaluator for the `calculate` tool several domains expose (never `eval`)."""

from __future__ import annotations

import ast
import math
import re

from ._errors import InvalidArguments
from ._graph import conditions

CALCULATE_CONDITIONS = conditions("the expression's value is known, rounded to 2 decimals")
"""The `calculate` tool's postcondition in dependency-graph mode (it needs nothing first)."""

MAX_EXPRESSION_LENGTH = 200
MAX_PARENTHESES = 32
"""Deepest parenthesis nesting accepted."""
MAX_DEPTH = 100
"""Deepest expression tree accepted (a sum of 61 numbers is 61 deep; 200 characters bound it anyway)."""
_ALLOWED = re.compile(r"^[0-9+\-*/(). ]*$")
_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}
_UNARY = {ast.UAdd: lambda a: a, ast.USub: lambda a: -a}


def _bad(message: str) -> InvalidArguments:
    return InvalidArguments(message, field="expression")


def _evaluate(node: ast.AST, depth: int) -> float:
    if depth > MAX_DEPTH:
        raise _bad(f"expression is nested too deeply (at most {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate(node.left, depth + 1)
        right = _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Div) and right == 0:
            raise _bad("division by zero")
        return _BINARY[type(node.op)](left, right)
    raise _bad("only numbers, + - * / and parentheses are allowed")


def _parenthesis_depth(expression: str) -> int:
    depth = deepest = 0
    for char in expression:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


def evaluate_arithmetic(expression: str) -> float:
    """Evaluate `expression` (digits, `+ - * / ( ) .` and spaces only), rounded to 2 decimals.

    Anything else — names, calls, `**`, `//`, `%`, `;`, division by zero, more than 200 characters,
    more than 32 levels of parentheses, a non-finite result — raises `InvalidArguments`.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise _bad("expression is empty")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise _bad(f"expression is too long (at most {MAX_EXPRESSION_LENGTH} characters)")
    if not _ALLOWED.match(expression):
        raise _bad("invalid characters in expression: only digits, + - * / ( ) . and spaces are allowed")
    if "**" in expression or "//" in expression:
        raise _bad("only numbers, + - * / and parentheses are allowed")
    if _parenthesis_depth(expression) > MAX_PARENTHESES:
        raise _bad(f"expression is nested too deeply (at most {MAX_PARENTHESES} levels of parentheses)")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        raise _bad("expression is not valid arithmetic") from None
    try:
        result = _evaluate(tree.body, 0)
    except OverflowError:
        raise _bad("result is too large") from None
    if not math.isfinite(result):
        raise _bad("result is too large")
    return round(result, 2) + 0.0
