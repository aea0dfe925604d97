"""Spec fields other than the command and times: GPUs, memory, priority, retries, limits, environments."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assistant.parsing.numbers import DURATION_UNIT, NUMBER, duration_minutes, tidy, to_int, to_number

_DUR = rf"(?:{NUMBER})\s*(?:个半|个)?\s*{DURATION_UNIT}(?![a-z])|half\s+an\s+hour|an\s+hour|半\s*个?\s*小时"
_GPU_WORD = r"(?:gpus?|cards?|a100s?|h100s?|h200s?|4090s?|3090s?|l40s?|v100s?|显卡|卡|块卡|gpu卡)"
GPUS = [
    # "两张卡", "2 GPUs", and "两张80G的卡" once the memory is read (blanked): "两张   的卡"
    re.compile(
        rf"(?P<n>{NUMBER})\s*(?:x\s*|×\s*)?(?:(?:张|块|个|台)\s*(?:的\s*)?)?(?:-\s*)?{_GPU_WORD}(?![a-z])",
        re.I,
    ),
    re.compile(r"(?P<n>\d+)\s*卡"),
    re.compile(rf"\bgpus?\s*[:=]\s*(?P<n>{NUMBER})", re.I),
    # a bare count ending a clause: "用 H100 跑 train.py，两张"
    re.compile(rf"(?<![\d.第])(?P<n>{NUMBER})\s*[张块](?=\s*(?:$|[，,。.;；!！]))"),
]
# two counts to choose from: "2 or 4 GPUs", "2-4 gpus", "两到四张卡" (a task runs on one fixed count)
GPU_CHOICE = re.compile(
    rf"(?<![\d.])(?:{NUMBER})\s*(?:\bor\b|\bto\b|-|–|~|或者?|到|至)\s*(?:{NUMBER})\s*(?:张|块|个)?\s*{_GPU_WORD}(?![a-z])",
    re.I,
)
# a minus sign before a count: "-1 GPUs", "用 -1 张卡" (not a dash inside a word: "batch-2")
NEGATIVE = re.compile(r"(?:^|[\s(（:：=用要给跑])[-−]\s*$")
# a part of one GPU ("half a GPU", "0.25 of a gpu", "a shared GPU", "半张卡", "共享一张卡"): gpu_fraction
GPU_PART = re.compile(
    r"\b(?:(?P<half>half)|(?P<quarter>(?:a\s+)?quarter))(?:\s+of)?(?:\s+(?:a|one|the))?\s+(?:gpu|card)\b"
    r"|(?<![\d.])(?P<n>0?\.\d+)\s*(?:of\s+(?:a|one)\s+)?(?:gpus?|cards?)\b"
    r"|\b(?P<shared>shared|sharing\s+(?:a|one|the)|share\s+(?:a|one|the))\s+(?:gpu|card)\b"
    r"|(?P<zhalf>半)\s*(?:张|块|个)\s*(?:卡|GPU|gpu|显卡)|(?P<zquarter>四分之一)\s*(?:张|块|个)?\s*(?:卡|GPU|gpu|显卡)"
    r"|(?P<zshared>(?:共享|共用|合用|分享))\s*(?:一)?\s*(?:张|块|个)?\s*(?:卡|GPU|gpu|显卡)",
    re.I,
)
GPU_ONE = re.compile(r"\b(?:a|one|single|1)\s+(?:gpu|card)\b|单卡|一张卡|一块卡", re.I)
GPU_ZERO = re.compile(
    r"\bcpu[\s-]*only\b|\bno\s+gpus?\b|\bwithout\s+(?:a\s+)?gpus?\b|\bon\s+(?:the\s+)?cpu\b|\b0\s+gpus?\b"
    r"|不用\s*(?:gpu|显卡|卡)|只用\s*cpu|纯\s*cpu|不需要\s*(?:gpu|显卡)|用\s*cpu",
    re.I,
)
# host resources nightshift does not reserve ("16 CPUs", "64GB of RAM", "200GB of disk", "64G内存"): never
# read as GPU memory
HOST_RESOURCE = re.compile(
    rf"(?<![\w.])(?:{NUMBER})\s*(?:x\s*)?(?:cpus?|cpu[\s-]+cores?|cores?|threads|vcpus?)\b"
    rf"|(?<![\w.])(?:{NUMBER})\s*(?:gb|g|gib|tb|t|mb)?\s*(?:of\s+)?(?:ram|system\s+memory|host\s+memory|cpu\s+memory"
    r"|disk(?:\s+space)?|storage|ssd|scratch(?:\s+space)?)\b"
    rf"|(?<![\w.])(?:{NUMBER})\s*(?:核|个核|个\s*cpu|个\s*CPU)|(?:{NUMBER})\s*(?:gb|g|t|tb)?\s*(?:的)?(?:内存|硬盘|磁盘)",
    re.I,
)
MEMORY = re.compile(
    rf"(?P<n>{NUMBER})\s*(?:gb|g|gib|gigs?|gigabytes?)(?![a-z0-9])"
    r"(?!\s*(?:of\s+)?(?:ram|system\s+memory|host\s+memory|cpu\s+memory|disk|storage|ssd|scratch|内存|硬盘|磁盘))"
    r"(?:\s*(?:of\s+)?(?:显存|vram|memory|mem|free))?"
    r"|(?:显存|vram|memory)\s*(?:至少|不少于|>=|大于|:|：)?\s*(?P<m>\d+(?:\.\d+)?)\s*(?:gb|g)?(?![a-z0-9])",
    re.I,
)
PRIORITY = [
    (
        "urgent",
        re.compile(
            # "not urgent", "不紧急": low, below
            r"(?<!not\s)(?<!n't\s)(?<!\bno\s)\burgent(?:ly)?\b|\basap\b|as\s+soon\s+as\s+possible|\bcritical\b"
            r"|(?<!不)紧急|(?<!不)加急|十万火急|最高优先级"
            # "highest priority", "优先级最高": the top class, as a change's "raise it to the highest" is
            r"|\b(?:highest|top)[\s-]*(?:priority|prio)\b|\bpriority\s*[:=]?\s*highest\b"
            r"|优先级(?:设成|设为|调成|调到|改成|是|为|要)?\s*最高",
            re.I,
        ),
    ),
    (
        "low",
        re.compile(
            r"\blow[\s-]*(?:priority|prio)\b|\bpriority\s*[:=]?\s*low\b|\bnot\s+urgent\b|\bno\s+rush\b|\bwhenever\b"
            r"|\bbackground\b|低优先级|优先级低(?:一点儿?|一些|些)?|不急|不着急|低优先"
            r"|\b(?:not|isn'?t|no)\s+(?:urgent|important)\b|不紧急|不重要|不用急|可以晚点"
            r"|\bcan\s+wait\b(?!\s+(?:for|until|till|on|after)\b)",
            re.I,
        ),
    ),
    (
        "high",
        re.compile(
            r"\bhigh[\s-]*(?:priority|prio)\b|\bpriority\s*[:=]?\s*high\b|(?<!not\s)(?<!n't\s)\bimportant\b"
            r"|\bquickly\b|\bsoon\b"
            r"|高优先级|优先级(?:设成|设为|调成|调到|改成|是|为)?\s*高(?:一点儿?|一些|些)?|高优先|优先跑|尽快|(?<!不)重要",
            re.I,
        ),
    ),
    ("normal", re.compile(r"\bnormal\s+priority\b|\bpriority\s*[:=]?\s*normal\b|普通优先级", re.I)),
]
_TIMES = {"once": 1, "twice": 2, "thrice": 3}
RETRIES = [
    re.compile(
        rf"\bretr(?:y|ies)\s*(?:it\s*)?(?:up\s+to|at\s+most|max)?\s*[:=]?\s*(?P<n>{NUMBER})\s*(?:times|x)?\b",
        re.I,
    ),
    re.compile(rf"(?P<n>{NUMBER})\s*(?:retries|retry|re-?tries)\b", re.I),
    re.compile(rf"(?:重试|重跑|重新跑)\s*(?P<n>{NUMBER})\s*次"),
    re.compile(rf"(?:失败|挂了)[了后的话]*(?:自动)?(?:重试|重跑)\s*(?P<n>{NUMBER})?\s*次?"),
    re.compile(r"\bretry\s+(?:it\s+)?(?P<n>once|twice|thrice)\b", re.I),
    re.compile(r"\bretry\s+(?:it\s+)?(?:if|when|on)\s+(?:it\s+)?fail(?:s|ure)?\b", re.I),
]
TIME_LIMIT = [
    re.compile(
        r"(?:\bat\s+most|\bno\s+(?:more|longer)\s+than|\bmax(?:imum)?(?:\s+(?:of|run\s*time))?|\btime[\s-]?limit"
        r"(?:\s+(?:of|is))?|\blimit(?:\s+(?:it|(?:task|job)\s*#?\d+|#?\d+))?\s+to|\bcap(?:\s+(?:it|(?:task|job)\s*#?\d+|#?\d+))?\s+at|\b(?:kill|stop)\s+(?:it\s+)?after"
        r"|\btime\s*out(?:\s+(?:of|after))?|\bwall[\s-]?time(?:\s+of)?|\bfor\s+at\s+most|\bnot\s+(?:more|longer)"
        rf"\s+than|\b(?:runs?|takes?|goes)\s+(?:longer|more)\s+than|\blimit\s*[:=]?)\s*[:=]?\s*(?P<d>{_DUR})|(?P<e>{_DUR})\s*(?:time[\s-]?limit|limit|timeout|wall[\s-]?time|cap|max(?:imum)?)\b",
        re.I,
    ),
    re.compile(
        rf"(?:限时|最多(?:跑|运行)?|不超过|超时(?:时间)?(?:设为|为|设成)?"
        rf"|(?:时间限制|时限)(?:为|是|改成|改为|设为|设成|调成|调到|延长到|延到)?|最长(?:跑|运行)?)\s*(?P<d>{_DUR})"
        rf"|(?P<f>{_DUR})\s*(?:后|以后)?\s*(?:就)?(?:自动)?(?:杀掉|停掉|停止|超时|强制停止)"
    ),
    # "set the time limit of 5 to 2 hours": the task named between the field and its value
    re.compile(
        rf"\b(?:time[\s-]?limit|time\s*out|wall[\s-]?time)\b.{{0,30}}?\b(?:to|at)\s+(?P<d>{_DUR})", re.I
    ),
]
ESTIMATE = [
    re.compile(
        r"(?:\btakes?|\btaking|\bshould\s+take|\bwill\s+take|\bruns?\s+for|\bruns(?=\s+\d)|\brunning\s+for|\blasts?|\bexpected"
        r"(?:\s+to\s+take)?|\bestimated?(?:\s+(?:at|of))?|\bfor|\bneeds?)\s*(?:about|around|roughly|~|approximately)?"
        rf"\s*(?P<d>{_DUR})",
        re.I,
    ),
    re.compile(
        rf"(?:预计|大概|大约|估计|需要|要跑|约|跑)\s*(?:大概|大约|约)?\s*(?:要|需要)?\s*(?P<d>{_DUR})"
        r"(?!\s*(?:以后|之后|后))\s*(?:左右)?"
    ),
    re.compile(rf"(?:~|about|around|roughly)\s*(?P<d>{_DUR})", re.I),
    re.compile(rf"\b(?:job|task|run)\s+of\s+(?P<d>{_DUR})", re.I),  # "a 2-GPU job of 3h"
    re.compile(rf"(?P<d>{_DUR})\s*(?:estimated|expected|est\.?)(?![a-z])", re.I),  # "4h estimated"
    re.compile(rf"\bestimate\b.{{0,30}}?\bto\s+(?P<d>{_DUR})", re.I),  # "set the estimate of 5 to 30 min"
]
# a tag, a word of letters, digits and . - + : / @ (quoted or not): "tagged exp7", "tag: exp7", "标签 exp7"
_VALUE = r"[A-Za-z0-9][\w.\-+:/@]*"
_QUOTE = r"[\"'`“”‘’「」]?"
TAG = re.compile(
    rf"\btagged\s+(?:as\s+|with\s+)?{_QUOTE}(?P<a>{_VALUE}){_QUOTE}"
    rf"|\b(?:with\s+(?:the\s+)?)?tag\s*[:=]?\s*(?:(?:it|this|them)\s+(?:as\s+|with\s+)?)?{_QUOTE}(?P<b>{_VALUE}){_QUOTE}"
    rf"|(?P<c>{_VALUE})-tagged\b"
    rf"|标签\s*(?:为|是|叫)?\s*[:：]?\s*{_QUOTE}(?P<z>{_VALUE}){_QUOTE}"
    rf"|{_QUOTE}(?P<z2>{_VALUE}){_QUOTE}\s*(?:的)?标签",
    re.I,
)
CONDA = [
    re.compile(r"\bconda\s+activate\s+(?P<v>[\w.+\-/]+)", re.I),
    re.compile(
        r"\bconda\s*(?:env(?:ironment)?|环境)?\s*(?:[:=：]|是|用|为)?\s*(?!env|environment)(?P<v>[A-Za-z0-9_.+\-/]+)",
        re.I,
    ),
    re.compile(
        r"\b(?:in|using|with|inside|from)\s+(?:the\s+|my\s+)?(?P<v>[\w.+\-/]+)\s+(?:conda\s+)?env(?:ironment)?\b",
        re.I,
    ),
    re.compile(r"\benv(?:ironment)?\s*[:=]\s*(?P<v>[\w.+\-/]+)", re.I),
    re.compile(r"(?:conda)?\s*环境\s*[:：]?\s*(?P<v>[A-Za-z0-9_.+\-/]+)"),
    re.compile(r"(?:在|用|使用)\s*(?P<v>[A-Za-z0-9_.+\-/]+)\s*(?:这个)?\s*(?:conda)?\s*环境"),
]
# the folder a task runs in ("in /data/exp1", "workdir /data/exp1", "在 /data/exp1 目录下"): absolute only
_PATH = r"(?P<v>/[\w.\-/+@]*[\w\-+@/])"
WORKDIR = [
    re.compile(r"\b(?:workdir|working\s+dir(?:ectory)?|cwd)\s*(?:[:=]|is|of)?\s*" + _PATH, re.I),
    re.compile(r"\b(?:in|from|inside|under)\s+(?:the\s+)?(?:(?:folder|directory|dir)\s+)?" + _PATH, re.I),
    re.compile(r"(?:工作目录|目录|文件夹)\s*(?:是|为|[:：])?\s*" + _PATH),
    re.compile(r"(?:在|到)\s*" + _PATH + r"\s*(?:目录|文件夹)?\s*(?:下|里|中)?"),
]
DOCKER = [
    re.compile(
        r"\b(?:docker|container)\s*(?:image)?\s*[:=]?\s*(?P<v>[a-z0-9][a-z0-9._\-/:@]*[a-z0-9])", re.I
    ),
    re.compile(r"\b(?:image)\s*[:=]?\s*(?P<v>[a-z0-9][a-z0-9._\-/:@]*[a-z0-9])", re.I),
    re.compile(
        r"\b(?:in|using|with)\s+(?:the\s+)?(?P<v>[a-z0-9][a-z0-9._\-/]*:[\w.\-]+)\s*(?:image|container)?",
        re.I,
    ),
    re.compile(r"(?:镜像|容器)\s*[:：]?\s*(?P<v>[a-z0-9][a-z0-9._\-/:@]*[a-z0-9])", re.I),
    re.compile(r"(?:用|使用|在)\s*(?P<v>[a-z0-9][a-z0-9._\-/:@]*[a-z0-9])\s*(?:这个)?\s*(?:镜像|容器)", re.I),
]
# "after tasks 44 and 50", "after #3, #4": several parents, all read (`_ids_in`); "after 44": no hour of the
# day (25 and up), so a task id
DEPENDS = [
    re.compile(
        r"\bafter\s+(?:(?:the\s+)?(?:tasks?|jobs?)\s+)?"
        r"(?P<l>#?\d+(?:(?:\s*,\s*|\s+and\s+|\s*&\s*)(?:(?:task|job)\s+)?#?\d+)+)\b"
        r"(?!\s*(?:min|h\b|hours?|am|pm|gpus?|gb))",
        re.I,
    ),
    # "when 12 and 13 are done", "once tasks 12, 13 finish": several parents, with a word that they end
    re.compile(
        r"\b(?:once|when)\s+(?:(?:the\s+)?(?:tasks?|jobs?)\s+)?"
        r"(?P<l>#?\d+(?:(?:\s*,\s*|\s+and\s+|\s*&\s*)(?:(?:task|job)\s+)?#?\d+)+)\s+(?:are\s+|have\s+|both\s+|all\s+)*"
        r"(?:finished|done|completed|succeeded|finish|complete|succeed|end|ended|over)\b",
        re.I,
    ),
    # "等7号和8号跑完再跑 …": several parents in Chinese
    re.compile(
        r"(?:等|在)\s*(?:任务|作业)?\s*(?P<l>#?\d+\s*号?(?:\s*(?:和|、|,|，|与|及|跟)\s*(?:任务|作业)?\s*#?\d+\s*号?)+)"
        r"\s*(?:任务|作业)?\s*都?\s*(?:完成|跑完|结束|成功|做完)"
    ),
    re.compile(
        r"\bafter\s+(?P<n>2[5-9]|[3-9]\d|\d{3,})\b(?!\s*(?:min|h\b|hours?|days?|secs?|gpus?|gb|steps?))"
        r"(?![-/.:]\d|\s*年)",  # "after 2026-12-05": a date, no task 2026
        re.I,
    ),
    re.compile(
        r"\b(?:after|once|when)\s+(?:task|job|#)?\s*#?\s*(?P<n>\d+)\s*(?:is\s+|has\s+)?"
        r"(?:finishes|finished|completes|completed|is\s+done|done|succeeds|succeeded|ends|is\s+over)",
        re.I,
    ),
    re.compile(r"\bafter\s+(?:task|job)\s*#?\s*(?P<n>\d+)\b|\bafter\s+#(?P<h>\d+)\b", re.I),
    re.compile(r"\bdepend(?:s|ing)?\s+on\s+(?:task|job)?\s*#?\s*(?P<n>\d+)", re.I),
    re.compile(
        r"(?:等|在)?\s*(?:任务|作业)?\s*#?(?P<n>\d+)\s*号?\s*(?:任务|作业)?\s*(?:完成|跑完|结束|成功|做完)了?(?:[之以]?后|再)"
        r"|(?:在|等)\s*(?:任务|作业)\s*#?(?P<m>\d+)\s*(?:号)?\s*(?:之后|以后|后)"
        # after 等 ("wait for") the finishing word is enough: "等#42跑完跑 …"
        r"|等\s*(?:任务|作业)?\s*#?(?P<w>\d+)\s*号?\s*(?:任务|作业)?\s*(?:完成|跑完|结束|成功|做完)"
        # the finishing word before it: "跑完31号之后跑 …" (task 31, not the 31st)
        r"|(?:跑完|做完|完成)\s*(?:任务|作业)?\s*#?(?P<f>\d+)\s*号?\s*(?:任务|作业)?\s*(?:[之以]?后|再)"
    ),
    re.compile(r"依赖(?:于)?\s*(?:任务|作业)?\s*#?(?P<n>\d+)\s*号?\s*(?:任务|作业)?"),
    # "不管7号和8号成功失败…": several, however they end
    re.compile(
        r"(?=(?:不管|无论|不论))(?:不管|无论|不论)\s*(?:任务|作业)?\s*"
        r"(?P<l>#?\d+\s*号?(?:\s*(?:和|、|,|，|与|及|跟)\s*(?:任务|作业)?\s*#?\d+\s*号?)+)\s*(?:任务|作业)?"
        r"(?=\s*(?:是否)?\s*(?:都)?\s*(?:成功|失败|成败|结果|怎样|如何|跑得))"
    ),
    # "不管12号成功失败都跑 …": after task 12 however it ends (EITHER_WAY reads the rest)
    re.compile(
        r"(?=(?:不管|无论|不论))(?:不管|无论|不论)\s*(?:任务|作业)?\s*#?(?P<n>\d+)\s*号?\s*(?:任务|作业)?"
        r"(?=\s*(?:是否)?\s*(?:成功|失败|成败|结果|怎样|如何|跑得))"
    ),
]
# An environment variable set in words, outside the command: capitals by convention ("WANDB_MODE=offline",
# "HF_HOME='/data/hf'"), so "lr=0.1" stays a value to try and "--mode=fast" a flag
ENV_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_$.\-/])(?:env\s+|环境变量\s*)?(?!GPUS?=)(?P<k>[A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{2,}[0-9]*)="
    r"(?P<v>\"[^\"]*\"|'[^']*'|[^\s,;，；。`\"']+)"
)
# GPUs named by their index ("on gpu 3", "use GPUs 0 and 1", "用3号卡", "CUDA_VISIBLE_DEVICES=3"): the
# scheduler picks GPUs and sets CUDA_VISIBLE_DEVICES itself, so a request cannot pin one
GPU_INDEX = re.compile(
    r"\b(?:on|use|using|pin(?:ned)?\s+to|only)\s+(?:the\s+)?gpus?\s*(?:#|no\.?\s*|number\s+|index\s+|id\s+)?\d+"
    r"(?:\s*(?:,|and|&)\s*\d+)*(?!\s*(?:gb|gib|g\b|x\b|gpus?\b|cards?\b|hours?|h\b|min))(?![\w.])"
    r"|\bgpus?\s*(?:id|index|number)\s*[:=#]?\s*\d+|\bcuda:\d+|\bCUDA_VISIBLE_DEVICES\s*="
    r"|(?:用|在)\s*(?:第\s*)?\d+\s*号\s*(?:卡|显卡|GPU|gpu)|第\s*[\d一二三四五六七八]+\s*[张块号]\s*(?:卡|显卡|GPU|gpu)",
    re.I,
)
# Words that make a dependency wait for the parent to end however it ends (`depends_on_any`, afterany):
# "after 12 finishes, whatever happens", "after task 12 ends, pass or fail", "12 跑完后（不管成功失败）"
EITHER_WAY = re.compile(
    r"\b(?:whatever\s+happens|whatever\s+(?:the\s+)?(?:outcome|result)|either\s+way|however\s+it\s+ends"
    r"|regardless\s+of\s+(?:the\s+)?(?:outcome|result|how\s+it\s+ends|whether\s+it\s+(?:succeeds|fails|passes))"
    r"|no\s+matter\s+(?:what|how\s+it\s+ends|whether\s+it\s+(?:succeeds|fails|passes)|if\s+it\s+(?:fails|succeeds))"
    r"|even\s+if\s+it\s+(?:fails|crashes|(?:is|gets)\s+cancell?ed)"
    r"|whether\s+or\s+not\s+it\s+(?:succeeds|passes|works)"
    r"|whether\s+(?:it\s+)?(?:succeeds|passes|fails|works)(?:\s+or\s+(?:not|fails|succeeds|passes))?"
    r"|(?:success|pass|succeeds?|passes)\s+or\s+(?:fail|failure|fails))\b"
    r"|(?:不管|无论|不论)\s*(?:它|任务)?\s*(?:是否)?\s*(?:成功|失败|成败|结果|怎样|如何)[^，,。；;）)]*"
    r"|成功与否|成败都?|成功失败都|(?:即使|就算|哪怕)\s*它?\s*失败了?也?|是否成功|成功(?:还是|或)失败",
    re.I,
)
# A GPU model named as where to run: "on an A100", "using H100s", "on the 4090 box", "用 A100", "在 H100 上".
# Digits alone count only next to a GPU word ("4090 card"), so "batch 2048" or "v2 config" are no model.
_MODEL = r"(?:[AHVB]\d{2,4}|L40S?|[LT]4|GH200|RTX\s?\d{4}|\d{4}(?=\s*(?:gpus?|cards?|box|卡|显卡)))"
# A pinned node: "on node gpu-box-2", "on machine vm", "在 gpu-box-2 节点上", "节点 vm"
NODE = re.compile(
    r"\bon\s+(?:the\s+)?(?:node|box|machine|server|host)\s+(?P<v>[A-Za-z0-9][A-Za-z0-9_.-]*)"
    # "on node-b", "on worker_a": a name that starts with the word a node is (no digit needed then)
    r"|\bon\s+(?:the\s+)?(?P<u>(?:node|host|worker|server|machine)[-_.][A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?)(?![\w-])"
    r"|(?:在|用)\s*(?P<z>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*(?:这台|这个)?\s*(?:节点|机器|服务器)"
    # "在 gpu-box-9 上跑": a name with a dash or a digit, where the request runs (a GPU model is no node)
    r"|在\s*(?P<y>[A-Za-z][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)+|[A-Za-z]+[A-Za-z_.-]*\d[A-Za-z0-9_.-]*)\s*上面?"
    r"(?=\s*(?:跑|运行|执行|训练|提交|启动|[，,。]|$))"
    # "on gpu-box-9", "on node3", "on dgx-01": a host name (a digit, and a word hosts are named with) after
    # "on" without the word node ("on cifar-10", "on resnet-50", "on gpu0" are no node)
    r"|\bon\s+(?:the\s+)?(?P<w>(?=[\w.-]*\d)(?=(?:[\w.-]*[\d_.-])?(?:gpu|box|node|server|host|worker|machine|vm"
    r"|dgx|rig|srv)(?![a-z]))(?!gpus?[-_]?\d+(?![\w.-]))[A-Za-z][\w.-]*[A-Za-z0-9])(?![\w-])",
    re.I,
)
GPU_MODEL = [
    re.compile(
        rf"\b(?:on|use|using|with|needs?)\s+(?:an?\s+|the\s+|some\s+)?(?P<v>{_MODEL})s?"
        r"(?:\s*(?:gpus?|cards?|box|node|machine|server)s?)?(?![\w.])",
        re.I,
    ),
    re.compile(rf"(?:用|在|要|上)\s*(?P<z>{_MODEL})\s*(?:卡|显卡|上|的卡|机器)?", re.I),
]
# A count of a model: "2 A100s", "two H100 GPUs", "两张 A100", "4 张 4090", or after it: "A100s x2".
COUNTED_MODEL = re.compile(
    rf"(?<![A-Za-z0-9_.])(?P<n>{NUMBER})\s*(?:x\s*(?P<v>{_MODEL})|[张块]\s*(?P<w>{_MODEL}|\d{{4}})|(?P<u>{_MODEL}))"
    r"s?(?:\s*(?:gpus?|cards?|卡|显卡))?(?![A-Za-z0-9_.])"
    rf"|(?<![A-Za-z0-9_.])(?P<t>{_MODEL})s?(?:\s*(?:gpus?|cards?))?\s*[x×*]\s*(?P<k>\d+)(?![A-Za-z0-9_.])",
    re.I,
)
NAME = re.compile(
    r"\b(?:call\s+it|name\s+it|named|called|with\s+the\s+name|name\s*[:=]"
    r"|(?:change|set)\s+(?:the\s+|its\s+)?name\s+(?:of\s+(?:(?:task|job)\s*)?#?\d+\s+)?to"
    r"|rename\s+(?:it\s+|(?:(?:task|job)\s*)?#?\d+\s+)?(?:to|as)?)\s*[\"'“]?(?P<v>[\w.\-+@:/]+)"
    r"|(?:名字叫|名字是|命名为|叫做|名称为|取名|名字改(?:成|为)|改名(?:为|成|叫)?)\s*[\"'“「]?(?P<z>[\w.\-+@:/]+)",
    re.I,
)
TASK_ID = re.compile(
    r"(?:\b(?:task|job|id)\s*(?:number|no\.?|#)?\s*[#-]?\s*(?P<a>\d+)\b|#(?P<b>\d+)\b|(?P<c>\d+)\s*号"
    r"|(?:任务|作业)\s*#?\s*(?P<d>\d+))",
    re.I,
)
# ASCII neighbours only: Chinese runs words and numbers together ("31为什么还没跑"), and `\w` would match 为
BARE_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)(?<!\d:)(?P<n>\d{1,7})(?!:\d)"  # nor "gpu-box-9", nor "13:00"
    r"(?![A-Za-z0-9_]|\.\d|\s*-?\s*(?:gb|g\b|gpus?|cards?|hours?|h\b|min|%|days?|卡|张|块|个|小时|分钟|天|点|号))",
    re.I,
)


@dataclass
class Fields:
    """What was read from a request, as spec fields, and the text spans used."""

    values: dict[str, Any] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)


def _first(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return match
    return None


def _group(match: re.Match[str], *names: str) -> str | None:
    for name in names:
        try:
            value = match.group(name)
        except IndexError:
            continue
        if value:
            return value
    return None


def _blank(text: str, match: re.Match[str], found: Fields) -> str:
    found.spans.append(match.span())
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def _read_parents(text: str, found: Fields) -> str:
    """The tasks a request waits for: `depends_on` (they must succeed), or `depends_on_any` when it says to
    go on however they end ("whatever happens", "不管成功失败"); `text` with what was read blanked."""
    match = _first(DEPENDS, text)
    if not match:
        return text
    listed = _group(match, "l")
    ids = [int(n) for n in re.findall(r"\d+", listed)] if listed else []
    ids = ids or [int(_group(match, "n", "h", "m", "w", "f") or 0)]
    said_either_way = match.group(0).lstrip().startswith(("不管", "无论", "不论"))  # "不管7号和8号成功失败"
    text = _blank(text, match, found)
    either = EITHER_WAY.search(text)
    if either is None and not said_either_way:
        found.values["depends_on"] = ids
        return text
    found.values["depends_on_any"] = ids
    return text if either is None else _blank(text, either, found)


def _read_env(text: str, found: Fields) -> str:
    """Environment variables set outside the command ("WANDB_MODE=offline python train.py", "with
    HF_HOME=/data/hf", "环境变量 WANDB_MODE=offline") as the spec's `env`, in the order given."""
    env: dict[str, str] = {}
    for match in list(ENV_ASSIGNMENT.finditer(text)):
        value = match.group("v")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[match.group("k")] = value
        text = _blank(text, match, found)
    if env:
        found.values["env"] = env
    return text


# a secret of one's own for the job ("with my WANDB_API_KEY", "using my HF_TOKEN secret", "with my wandb key",
# "用我的 HF_TOKEN"): its name, as an environment variable, in capitals; the value is never in the chat
_SECRET_NAME = r"(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]+)"
SECRET_FOR_JOB = re.compile(
    r"\b(?:with|using|use|pass(?:ing)?|give\s+it)\s+(?:my|our)\s+(?:secrets?\s+)?"
    rf"(?P<n>{_SECRET_NAME}(?:\s*(?:,|and|&)\s*{_SECRET_NAME})*)(?:\s+(?:secrets?|keys?|tokens?))?"
    r"|\b(?:with|using|use)\s+(?:my|our)\s+(?P<w>wandb|w&b|weights\s*(?:&|and)\s*biases)\s+(?:api\s+)?key\b"
    r"|\b(?:with|using|use)\s+(?:my|our)\s+(?P<h>hf|hugging\s*face)\s+token\b"
    rf"|(?:用|带上|使用|带着)(?:我的|我们的)\s*(?P<z>{_SECRET_NAME}(?:\s*(?:和|、|,|，)\s*{_SECRET_NAME})*)"
    r"(?:\s*(?:密钥|secret|token|令牌))?",
    re.IGNORECASE,
)


def secrets_named(text: str) -> list[str]:
    """The names of one's own secrets a request gives its job, in order (see `SECRET_FOR_JOB`)."""
    names: list[str] = []
    for match in SECRET_FOR_JOB.finditer(text):
        if match.group("w"):
            names.append("WANDB_API_KEY")
        elif match.group("h"):
            names.append("HF_TOKEN")
        else:
            names += re.findall(_SECRET_NAME, match.group("n") or match.group("z") or "")
    return list(dict.fromkeys(names))


def _read_secrets(text: str, found: Fields) -> str:
    """One's own secrets the job is to get, as the spec's `secrets` (names only)."""
    names = secrets_named(text)
    if names:
        found.values["secrets"] = names
        for match in list(SECRET_FOR_JOB.finditer(text)):
            text = _blank(text, match, found)
    return text


def read_fields(text: str) -> tuple[Fields, str]:
    """Spec fields found in `text` (the command already removed), and the text with them blanked."""
    found = Fields()
    text = _read_secrets(text, found)
    text = _read_env(text, found)
    text = _read_parents(text, found)
    for key, patterns in (("time_limit_minutes", TIME_LIMIT), ("retries", RETRIES)):
        match = _first(patterns, text)
        if not match:
            continue
        if key == "time_limit_minutes":
            minutes = duration_minutes(_group(match, "d", "e", "f") or "")
            if minutes is not None:  # "时间限制 0 分钟" too: the spec refuses it, with the reason
                found.values[key] = tidy(minutes)
        else:
            number = _group(match, "n")
            times = _TIMES.get(number.lower()) if number else None
            found.values[key] = times or (to_int(number) if number else 1)
        text = _blank(text, match, found)
    estimate = _first(ESTIMATE, text)
    if estimate:
        minutes = duration_minutes(estimate.group("d"))
        if minutes:
            found.values["estimated_minutes"] = tidy(minutes)
            text = _blank(text, estimate, found)
    text = _read_resources(text, found)
    for key, patterns in (("workdir", WORKDIR), ("docker_image", DOCKER), ("conda_env", CONDA)):
        match = _first(patterns, text)
        if match and match.group("v").lower() not in {"the", "my", "a", "is", "var", "variable"}:
            found.values[key] = match.group("v")
            text = _blank(text, match, found)
    text = _read_tags(text, found)
    return found, _read_labels(text, found)


def _read_tags(text: str, found: Fields) -> str:
    """The tags a new task is to carry ("tag exp7", "tagged baseline", "标签 exp7"), in the order given."""
    tags: list[str] = []
    for match in list(TAG.finditer(text)):
        tag = _group(match, "a", "b", "c", "z", "z2")
        if tag and tag not in tags:
            tags.append(tag)
            text = _blank(text, match, found)
    if tags:
        found.values["tags"] = tags
    return text


def _read_labels(text: str, found: Fields) -> str:
    """The name and the priority class."""
    name = NAME.search(text)
    if name:
        found.values["name"] = _group(name, "v", "z")
        text = _blank(text, name, found)
    for priority, pattern in PRIORITY:
        match = pattern.search(text)
        if match:
            found.values["priority"] = priority
            text = _blank(text, match, found)
            break
    return text


def _read_resources(text: str, found: Fields) -> str:
    node = NODE.search(text)
    if node and not (node.group("y") and re.fullmatch(_MODEL + r"s?", node.group("y"), re.I)):
        found.values["node"] = _group(node, "v", "z", "y", "w", "u")
        text = _blank(text, node, found)
    counted = COUNTED_MODEL.search(text)
    if counted and to_int(_group(counted, "n", "k") or ""):
        found.values["gpus"] = to_int(_group(counted, "n", "k") or "")
        found.values["gpu_model"] = re.sub(r"\s+", " ", _group(counted, "v", "w", "u", "t") or "").upper()
        text = _blank(text, counted, found)
    model = _first(GPU_MODEL, text)  # first: "on an A100" names a model, not one GPU
    if model:
        found.values["gpu_model"] = re.sub(r"\s+", " ", _group(model, "v", "z") or "").upper()
        text = _blank(text, model, found)
    memory = MEMORY.search(text)
    if memory:
        number = to_number(_group(memory, "n", "m") or "")
        if number:
            found.values["gpu_memory_gb"] = tidy(number)
            text = _blank(text, memory, found)
    part = GPU_PART.search(text)
    if part:
        fraction = _gpu_part(part)
        if fraction is not None:
            found.values["gpus"], found.values["gpu_fraction"] = 1, fraction
            return _blank(text, part, found)
    zero = GPU_ZERO.search(text)
    if zero:
        found.values["gpus"] = 0
        return _blank(text, zero, found)
    gpus = _first(GPUS, text)
    if gpus:
        number = to_int(gpus.group("n"))
        if number is not None:
            if NEGATIVE.search(text[: gpus.start()]):  # "用 -1 张卡": kept, so the spec says why not
                number = -number
            found.values["gpus"] = number
            return _blank(text, gpus, found)
    one = GPU_ONE.search(text)
    if one:
        found.values["gpus"] = 1
        text = _blank(text, one, found)
    return text


def _gpu_part(match: re.Match[str]) -> float | None:
    """The part of one GPU a `GPU_PART` match names (a shared GPU without a number: half of it)."""
    if match.group("n"):
        number = to_number(match.group("n"))
        return tidy(number) if number is not None and 0 < number < 1 else None
    if match.group("quarter") or match.group("zquarter"):
        return 0.25
    return 0.5


# a run of task ids ("tasks 12-15", "#12–#15", "12到15号"), not a date ("2026-12-05"), an hour span
# ("9-17:00") or part of a name ("gpu-box-12-15")
ID_RANGE = re.compile(
    r"(?<![A-Za-z0-9_.:/-])#?(?P<a>\d{1,7})\s*(?:-|–|~|到|至)\s*#?(?P<b>\d{1,7})(?![A-Za-z0-9_.:/-])"
    r"(?!\s*(?:am|pm|点|时|h\b|gb|%))",
    re.I,
)


# two ids side by side ("12 and 13", "#12, #13", "12和13号"), the second no size or time ("12, 2 GPUs")
_ID_PAIR = re.compile(
    r"(?<![A-Za-z0-9_.:/-])#?\d{1,7}\s*号?\s*(?:,|，|\band\b|&|和|、|与|及)\s*(?:(?:task|job)\s+)?#?\d{1,7}"
    r"(?![A-Za-z0-9_.:/-])(?!\s*(?:gpus?|cards?|gb|g\b|h\b|hours?|min|am|pm|点|张|块|卡|个|小时|分钟|%|x\b))",
    re.I,
)


def names_several_tasks(text: str) -> bool:
    """True when `text` names tasks side by side ("12 and 13") or a run of them ("12-15"), as a request
    that acts on several does; a number said as a time or a size ("after 13", "12, 2 GPUs") is none."""
    return bool(_ID_PAIR.search(text) or ID_RANGE.search(text))


_LISTED_ID = (
    r"(?:(?:task|job)s?\s*#?\s*|#|(?:任务|作业)\s*)?\d{1,7}(?:\s*号)?"
    r"(?![\d:.]|\s*-?\s*(?:gb|g\b|gpus?|cards?|hours?|h\b|min|%|days?|卡|张|块|个|小时|分钟|天|点))"
)
# "task 12 and 13", "12、13和14号": numbers listed beside a task id are task ids too
ID_LIST = re.compile(
    rf"(?<![A-Za-z0-9_.:/-]){_LISTED_ID}(?:\s*(?:,|，|、|和|及|与|跟|\band\b|&)\s*{_LISTED_ID})+", re.I
)


def task_ids(text: str) -> list[int]:
    """Task ids named in `text` ("task 12", "#12", "12号", "任务12"; each of a list beside one, "task 12 and
    13", "12和13号"; each of a run, "tasks 12-15"); bare numbers only as a last resort."""
    named = [(m.start(), int(next(g for g in m.groups() if g))) for m in TASK_ID.finditer(text)]
    for listed in ID_LIST.finditer(text):
        if any(listed.start() <= at < listed.end() for at, _ in named):
            named += [
                (listed.start() + n.start(), int(n.group())) for n in re.finditer(r"\d+", listed.group())
            ]
    ids = list(dict.fromkeys(task_id for _, task_id in sorted(named)))
    if not ids:
        ids = [int(m.group("n")) for m in BARE_NUMBER.finditer(text)]
    for run in ID_RANGE.finditer(text):
        first, last = int(run["a"]), int(run["b"])
        if first in ids or last in ids:  # a run the ids above start or end: every task in it, in order
            at = min(ids.index(end) for end in (first, last) if end in ids)
            every = list(range(first, last + 1)) if 0 < last - first <= 1000 else [last]
            ids = [*ids[:at], *every, *(i for i in ids[at:] if i not in every)]
    return list(dict.fromkeys(ids))
