"""Which module of the model made an attention call: a stack of the modules running, and names.

A forward pre-hook (push) and a forward hook (pop, run even when the forward raises), both
registered once for every module (``torch.nn.modules.module.register_module_forward_pre_hook``:
two hooks, however many modules the model has, and nothing to do for another model's modules)
keep a stack of the model's modules now running, innermost last, one stack per thread. An
attention call is credited to the innermost module of the model whose method is on the call's
Python stack (:meth:`ModuleStack.caller`): the module whose ``forward`` called it, or whose other
method did (attnkit's own layers call ``attend``; a decoder layer holds a self- and a
cross-attention), else the innermost module running.

A module's *group* is its name up to the first numbered part (``encoder.layer.3.attention.self``
-> ``encoder.layer``): the stack of layers it belongs to, which rollout multiplies through. A
call is *cross*-attention when nn.MultiheadAttention is given a key that is not its query, or
when the module's name says so (:data:`CROSS_NAMES`: ``crossattention``, ``cross_attn``,
``encoder_attn``, ``EncDecAttention``); every other call counts as self-attention (a decoder's
self-attention over a key cache included, whose T and S differ).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable

from torch import nn
from torch.nn.modules import module as hooks

#: names of cross-attention modules in common implementations
CROSS_NAMES = re.compile(r"cross|encoder_?attn|enc_?dec", re.IGNORECASE)
#: how many Python frames above an attention call are searched for the module that made it
FRAMES = 16


def group_of(name: str) -> str:
    """The layer stack a module belongs to: its name up to the first numbered part, or its
    parent's name when no part is numbered (``""``: the model itself)."""
    parts = name.split(".") if name else []
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i])
    return ".".join(parts[:-1])


def kind_of(name: str) -> str:
    """``"cross"`` when the module's name says cross-attention, else ``"self"``."""
    return "cross" if CROSS_NAMES.search(name) else "self"


def describe(name: str) -> str:
    """A module's name as messages write it (the model itself: ``the model``)."""
    return name or "the model"


class ModuleStack:
    """The model's modules now running (see the module docstring). ``on_start()`` is called when
    a forward of the model (or of one of its modules called alone) begins, ``on_end(module,
    failed)`` when it ends, ``failed`` True when it raised."""

    def __init__(
        self,
        model: nn.Module,
        on_start: Callable[[], None],
        on_end: Callable[[nn.Module, bool], None],
    ):
        self.model = model
        self.names = {id(m): name for name, m in model.named_modules()}
        self._on_start, self._on_end = on_start, on_end
        self._local = threading.local()
        self._handles: list = []

    def attach(self) -> None:
        """Hook the calls of every module (the model's are followed)."""
        self._handles.append(hooks.register_module_forward_pre_hook(self._push))
        self._handles.append(hooks.register_module_forward_hook(self._pop, always_call=True))

    def detach(self) -> None:
        """Remove every hook :meth:`attach` added."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def running(self) -> list[nn.Module]:
        """This thread's stack, innermost last."""
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _push(self, module: nn.Module, args) -> None:
        if id(module) not in self.names:
            return
        stack = self.running()
        if not stack:
            self._on_start()
        stack.append(module)

    def _pop(self, module: nn.Module, args, output) -> None:
        if id(module) not in self.names:
            return
        stack = self.running()
        while stack and stack.pop() is not module:
            pass  # an inner module that raised without its hook: drop it too
        if not stack:
            self._on_end(module, sys.exc_info()[0] is not None)

    def caller(self) -> str | None:
        """The name of the model's module that made the attention call being run (the nearest
        frame above this one whose ``self`` is one of the model's modules), or None when no module
        of the model made it."""
        stack = self.running()
        frame = sys._getframe(1)
        for _ in range(FRAMES):
            if frame is None:
                break
            code = frame.f_code
            if code.co_argcount and code.co_varnames[0] == "self":
                owner = frame.f_locals.get("self")
                name = self.names.get(id(owner))
                if name is not None:
                    # a module further out than the innermost one running: trust the stack
                    if stack and owner is not stack[-1] and any(owner is m for m in stack):
                        return self.names[id(stack[-1])]
                    return name
            frame = frame.f_back
        return self.names[id(stack[-1])] if stack else None
