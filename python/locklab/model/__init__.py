"""The experiment model: what to run (spec, variants, the typed configuration key), the lock
catalogue the engine reports, campaign files, and the checks that refuse bad input before
anything runs. Nothing here runs anything."""
