"""A proxy exposing exactly an oracle's public interface, for honesty tests."""


class PublicOnly:
    """Exposes exactly the public oracle interface, nothing else (no model anywhere)."""

    def __init__(self, oracle):
        self._o = oracle

    d = property(lambda self: self._o.d)
    exact = property(lambda self: self._o.exact)
    accuracy = property(lambda self: self._o.accuracy)
    rtol = property(lambda self: self._o.rtol)
    count = property(lambda self: self._o.count)
    transcript = property(lambda self: self._o.transcript)

    def require(self, n, *, what=""):
        return self._o.require(n, what=what)

    def error_bound(self, answer):
        return self._o.error_bound(answer)

    def query_batch(self, Xs):
        return self._o.query_batch(Xs)
