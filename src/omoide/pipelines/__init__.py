"""What runs over the layers: lifecycle moves, forgetting, retention, distillation, the schedule."""
