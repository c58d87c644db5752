"""Consumers: push (:mod:`.push`), pull (:mod:`.pull`) and POP (:mod:`.pop`), on what they share
(:mod:`.core`)."""
