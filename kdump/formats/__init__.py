"""Pure decoders and encoders of Kafka's on-disk structures: bytes in, values out, no I/O."""
