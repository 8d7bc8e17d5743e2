"""Execution: the engine process, the sweep runner, adaptive repetition (and the completion
rule), the tuner and its stored rounds. Every run ends in the store."""
