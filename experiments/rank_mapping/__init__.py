"""BiGraph halving-doubling with naive against EFLOPS-remapped ranks, at job level."""
