"""A data source as a Chinese reader takes it: the kind of source it is and the sites it is on, the English
original only as its links (the Chinese spreadsheet's sources sheet: issue #40, "every face of the zh-CN result in
Chinese"). An English reader gets the source as the data file states it."""

from __future__ import annotations

import re
from urllib.parse import urlparse

from trainsizer.i18n import N_, tr

URL = re.compile(r"https?://[^\s;,'\"()（）]+[^\s;,'\".()（）]")
ARXIV = re.compile(r"arXiv:(\d{4}\.\d{4,5})")
# the kind of a source, by the word it starts with or holds (the data files' conventions: "ESTIMATE ...", "fitted",
# "assumed", a paper's arXiv id); anything else is a public source named by its sites
KINDS = ((re.compile(r"^\s*estimate", re.I), N_("an estimate")), (re.compile(r"^\s*fitted", re.I),
                                                                  N_("fitted to the validation cases")),
         (re.compile(r"^\s*assum", re.I), N_("assumption")), (ARXIV, N_("paper")))
PUBLIC = N_("public source")
NAME_END = re.compile(r" \(|; |, | · ")  # a source's name ends at its first remark or its second source
NAME_CHARS = 60  # longer, the first part is a sentence, not a name


def links(source: str) -> list[str]:
    """The source's URLs (an arXiv id as its abstract page), each once, in order."""
    found = URL.findall(source) + [f"https://arxiv.org/abs/{a}" for a in ARXIV.findall(source)]
    return list(dict.fromkeys(found))


def described(source: str, lang: str) -> str:
    """The source in ``lang``: as stated in English; in Chinese its kind and the sites of its links (or that the
    original is in English, where it has no link)."""
    if not lang.startswith("zh"):
        return source
    kind = next((k for pattern, k in KINDS if pattern.search(source)), PUBLIC)
    hosts = list(dict.fromkeys(urlparse(u).netloc.removeprefix("www.") for u in links(source)))
    if hosts:
        return tr("{kind}: {sites}", lang, kind=tr(kind, lang), sites="、".join(hosts))
    name = NAME_END.split(source.strip(), maxsplit=1)[0]  # its own name: "NVIDIA H800 Tensor Core GPU datasheet"
    if kind != PUBLIC:
        return tr(kind, lang)
    if name and len(name) <= NAME_CHARS:
        return tr("{kind}: {sites}", lang, kind=tr(kind, lang), sites=name)
    return tr("{kind} (the original in English)", lang, kind=tr(kind, lang))
