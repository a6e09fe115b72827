"""Layer 3: the semantic store on ChromaDB, its document registry and the information cache."""
