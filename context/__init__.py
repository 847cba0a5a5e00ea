"""Pure prompt assembly: layers, stable prefix + hash, splice, budgets. No I/O."""
