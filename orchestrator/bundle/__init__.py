"""The run bundle: typed journal records, hash-chained streams, BagIt sealing and verification."""
