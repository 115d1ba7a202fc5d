"""The graph family's server endpoint, ``POST /v1/graph/node``: one node of a graph model's graph
(its index or its name), its neighbourhood's attention per layer and head, and its saliency."""

# no "from __future__ import annotations": FastAPI reads the handler's annotations at runtime

from pydantic import BaseModel, Field

from attnkit.families.serving import Endpoint, Routes, ServedModel


class GraphNodeRequest(BaseModel):
    """``POST /v1/graph/node``: one node of a graph model's graph (its index or its name)."""

    model: str | None = None
    node: int | str = Field(..., description="an index, or a node id of the data")


def add_route(app, routes: Routes) -> None:
    """``POST /v1/graph/node``: answered in a worker thread, outside the micro-batcher (one
    node's explanation is one forward and one backward over the whole graph)."""
    from fastapi.responses import JSONResponse
    from starlette.concurrency import run_in_threadpool

    @app.post("/v1/graph/node", responses=routes.errors)
    async def graph_node(request: GraphNodeRequest):
        model = routes.pick(request.model, "graph")
        explained = await run_in_threadpool(explain_node, model, request.node)
        return JSONResponse({"model": model.name, **explained})


def explain_node(model: ServedModel, node: int | str) -> dict:
    """A node's neighbourhood, attention per layer and head, and saliency (``to_dict``), with
    each neighbour's class; a node that is none of the graph's is the API object's InputError
    naming ``node`` (a 422)."""
    explained = model.loaded.explain_node(node)
    graph = model.loaded.graph
    index = {name: i for i, name in enumerate(graph.nodes)}
    classes = [int(graph.y[index[name]]) for name in explained.neighbours]
    return {
        **explained.to_dict(),
        "classes": [graph.classes[c] if c >= 0 else None for c in classes],
        "class_names": graph.classes,
    }


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a graph model."""
    cfg, net = loaded.config, loaded.net
    return {
        "task": loaded.graph.name,
        "attention": cfg.model.attention if net.has_attention else "none (gcn)",
        "model_type": cfg.model.type,
        "has_attention": bool(net.has_attention),
        "layers": sum(1 for _ in net.layers) if net.has_attention else None,
        "heads": cfg.model.heads if net.has_attention else None,
        "nodes": loaded.graph.num_nodes,
        "has_gold": False,
        "explain": True,
    }


def example(loaded) -> int | None:
    """The node the explorer opens on: the first (0), or None for a graph without nodes."""
    return 0 if loaded.graph.num_nodes > 0 else None


ENDPOINT = Endpoint("/v1/graph/node", add_route, {}, info, example=example)
