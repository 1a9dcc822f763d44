"""parse_hlo: read HLO text into an HloModule (the reader lives in xla_inspect.hlo)."""

from xla_inspect.hlo.reader import parse_hlo

__all__ = ["parse_hlo"]
