"""The engine: catalog, table store, semi-naive fixpoint, timestep loop, backends."""
