"""Register access dispatch generated from an interface table (:mod:`hwdesc`), in the manner of QEMU's
register API: the table says which registers exist, where, with which access and reset value; the device
gives hooks only for the registers whose access has a side effect.

Without a hook, a register behaves as its access type says: ``RW``/``WO`` store what is written (``WO``
reads as 0), ``W1S`` ORs the written bits into its state, ``W1C`` clears them in the state of its ``alias``
(and reads that state), ``RO`` reads its value and reports a write to ``read_only(register, value)``.
Hooks are ``read() -> int`` and ``write(value)``; those of an array register get the element index first.
Offsets that no register occupies are the device's business (:meth:`RegisterBank.read` returns ``None``,
:meth:`RegisterBank.write` ``False``).
"""

from __future__ import annotations

from functools import partial


class RegisterBank:
    def __init__(self, regmap, *, read: dict | None = None, write: dict | None = None, read_only=None):
        self.map = regmap
        self.values: dict[str, list[int]] = {}
        self._read_only = read_only or (lambda reg, value: None)
        self._readers: dict = {}
        self._writers: dict = {}
        read = dict(read or {})
        write = dict(write or {})
        for reg in regmap:
            rh, wh = read.pop(reg.name, None), write.pop(reg.name, None)
            for i, off in enumerate(reg.offsets):
                self._readers[off] = self._bind(rh, reg, i) if rh else self._default_reader(reg, i)
                self._writers[off] = self._bind(wh, reg, i) if wh else self._default_writer(reg, i)
        assert not read and not write, f"{regmap.name}: hooks for undeclared registers {sorted(read) + sorted(write)}"
        self.reset()

    @staticmethod
    def _bind(hook, reg, i):
        return partial(hook, i) if reg.count > 1 else hook

    def _default_reader(self, reg, i):
        if reg.access == "WO":
            return lambda: 0
        name = reg.alias if reg.access == "W1C" and reg.alias else reg.name
        return lambda: self.values[name][i]

    def _default_writer(self, reg, i):
        if reg.access == "RO":
            return partial(self._read_only, reg)
        if reg.access == "W1S":
            def w1s(value):
                self.values[reg.name][i] |= value
            return w1s
        if reg.access == "W1C":
            name = reg.alias or reg.name

            def w1c(value):
                self.values[name][i] &= ~value
            return w1c

        def store(value):
            self.values[reg.name][i] = value
        return store

    def reset(self) -> None:
        """Every register back to its reset value (a configuration-dependent one reads through its hook)."""
        for reg in self.map:
            self.values[reg.name] = [reg.reset or 0] * reg.count

    def handles(self, offset: int) -> bool:
        return offset in self._readers

    def read(self, offset: int) -> int | None:
        r = self._readers.get(offset)
        return None if r is None else r()

    def write(self, offset: int, value: int) -> bool:
        w = self._writers.get(offset)
        if w is None:
            return False
        w(value)
        return True

    def __getitem__(self, name: str) -> int:
        return self.values[name][0]

    def __setitem__(self, name: str, value: int) -> None:
        self.values[name][0] = value


def register_property(name: str, doc: str = ""):
    """An attribute of a device that is the stored value of register ``name`` of its bank ``self.regs``."""
    return property(lambda self: self.regs.values[name][0],
                    lambda self, value: self.regs.values[name].__setitem__(0, value), doc=doc or name)
