"""Graphs for node classification: the Planetoid citation graphs (Cora, Citeseer, Pubmed), a
graph of your own (an edge list and a node table, TSV) and the generated DictionaryLookup task
(Brody et al. 2022), each read into one :class:`attnkit.data.graph.graph_data.Graph`."""
