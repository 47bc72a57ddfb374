"""The head noun of an entity's name or description (issue 49): what the thing *is*, whatever the words
around it, so "the light switch", "a switch by the door" and "light switches" are one kind of thing
(``switch``) while "the door" and "the window" are two.

``head("a white light switch on the wall next to the door")`` is ``Head("switch", "light")``:

* leading determiners, possessives and quantifiers are dropped ("the", "his", "some", "two");
* the phrase is cut at its first preposition, conjunction, relative word or comma ("on the wall ...");
  and at a participle that starts a clause ("a man *holding* a cup", "a cup *filled* with water",
  "the cabinet *opened*"), not at one that modifies the noun after it ("a *sliding* door");
* the head is the last word left that can be a noun (a word ``lemminflect`` does not know counts as
  one: "cellphone", "tv"), lemmatised as a noun ("switches" -> "switch", "stairs" -> "stair");
* its *modifier* is the word just before it when that word names a kind ("light" in "light switch",
  "coffee" in "coffee table", "living" in "living room"), not a colour, size, material or state
  (``DESCRIPTIVE``): "a white switch" has none.

Two heads *agree* (``agree``) when their nouns are the same and their modifiers do not differ (one
missing is no difference: "switch" and "light switch" agree, "coffee table" and "kitchen table" do
not). A vague head ("room", "area", "thing": ``VAGUE``) agrees only with the same modifier on both
sides ("living room" and "the living room on the left", never "a room" and "the dining room").
Pure functions over ``lemminflect``'s dictionary (it ships in the wheel; loaded on first use).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
DROP = frozenset("the a an some any this that these those his her their its my your our another each every one two "
                 "three several many few both all other".split())
CUT = frozenset("of on in at by near next to from with without under over above below behind beside besides "
                "between inside outside into onto across along against around through for and or but while "
                "which that who whom whose where when as like than is are was were be being been has have had "
                "can could will would should may might".split())
DESCRIPTIVE = frozenset("""white black red green blue yellow orange purple pink brown grey gray beige silver gold
    golden dark colored coloured small little large big huge tiny tall short long wide narrow thick
    thin round square flat empty full open closed clean dirty old new wooden wood metal metallic plastic
    leather cotton woolen wool ceramic steel stainless shiny striped plain pale bright""".split())
VAGUE = frozenset("room area space place spot part piece side thing things object item stuff surface section "
                  "corner".split())


class Head(NamedTuple):
    """A phrase's head noun (lemma) and the word naming its kind just before it (None: none)."""

    noun: str
    modifier: str | None


@functools.lru_cache(maxsize=65536)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    import lemminflect

    return dict(lemminflect.getAllLemmas(word))


def _participle(word: str) -> bool:
    lemmas = _lemmas(word)
    return word.endswith(("ing", "ed")) and "VERB" in lemmas and lemmas["VERB"][0] != word


def _can_be_noun(word: str) -> bool:
    lemmas = _lemmas(word)
    return not lemmas or "NOUN" in lemmas


def _names_a_kind(word: str) -> bool:
    """Whether ``word`` before a head noun names its kind ("light", "coffee", "living"), not a colour, size,
    material or state, a number or a function word."""
    if not word.isalpha() or word in DESCRIPTIVE or word in DROP or word in CUT:
        return False
    return _can_be_noun(word) or _participle(word)


def _noun_lemma(word: str) -> str:
    lemmas = _lemmas(word)
    return str(lemmas["NOUN"][0]) if "NOUN" in lemmas else word


def _phrase(text: str) -> list[str]:
    """The words of ``text``'s first noun phrase: determiners dropped, cut before what follows it."""
    words = _WORD.findall(text.lower().split(",", 1)[0].replace("-", " "))
    start = 0
    while start < len(words) - 1 and words[start] in DROP:
        start += 1
    kept: list[str] = []
    for i, w in enumerate(words[start:], start):
        if kept and w in CUT:
            break
        following = words[i + 1] if i + 1 < len(words) else None
        if kept and _participle(w) and (following is None or following in CUT or following in DROP):
            break
        kept.append(w.removesuffix("'s"))
    return kept


@functools.lru_cache(maxsize=65536)
def head(text: str) -> Head | None:
    """The head of a name or description (None: no word in it)."""
    words = _phrase(text)
    for i in range(len(words) - 1, -1, -1):
        if _can_be_noun(words[i]) or i == 0:
            before = words[i - 1] if i > 0 else None
            modifier = before if before is not None and _names_a_kind(before) else None
            return Head(_noun_lemma(words[i]), modifier and _noun_lemma(modifier))
    return None


def heads(texts: Iterable[str]) -> set[Head]:
    return {h for t in texts if (h := head(t)) is not None}


def agree(a: Head, b: Head) -> bool:
    """Whether two heads name one kind of thing (the rule above)."""
    if a.noun != b.noun:
        return False
    if a.noun in VAGUE:
        return a.modifier is not None and a.modifier == b.modifier
    return a.modifier is None or b.modifier is None or a.modifier == b.modifier


__all__ = ["Head", "agree", "head", "heads"]
