"""Pieces several capabilities share: worker process pools that end with their owner (`workers`) and
the topic configuration a KRaft cluster recorded (`topic_config`).

May use: formats, scan, model, store, findings, errors. No other ops sub-package.
"""
