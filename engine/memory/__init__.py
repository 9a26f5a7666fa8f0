"""The three memory tiers: core (``core``: always in context), recall (``recall``: every
message) and archival (``archival``: passages), plus the model's proposals and the search helpers
they share. Import from the modules themselves; this package imports nothing, so that a light
module (``search``, say) does not bring SQLAlchemy and the stores with it."""
