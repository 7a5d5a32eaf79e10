"""Django-free building blocks every layer may use: service errors, the plug-in registry, retries,
text and CSV checks, money arithmetic.
"""
