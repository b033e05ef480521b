"""Recurrent models; `trainables.models.declared` declares them without importing their code."""
