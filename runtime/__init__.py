"""The engine: the store and its backends, the semi-naive fixpoint, timesteps, clocks and the
event API. Runs a ProgramPlan (``overlog.plan``); installed as ``overlog.runtime``."""
