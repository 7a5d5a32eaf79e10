"""The kinds of background step run, one module each, found through ``registry.KINDS``."""
