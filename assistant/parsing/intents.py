"""What a request asks for: one of the nine tools with its arguments, a question back, or a refusal."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from assistant.parsing.clears import cleared_fields
from assistant.parsing.commands import REPEAT_AT, STRONG, fenced_commands, find_command, remove_span
from assistant.parsing.fields import (
    BARE_NUMBER,
    EITHER_WAY,
    GPU_CHOICE,
    GPU_INDEX,
    HOST_RESOURCE,
    ID_LIST,
    ID_RANGE,
    SECRET_FOR_JOB,
    TASK_ID,
    names_several_tasks,
    read_fields,
    task_ids,
)
from assistant.parsing.fields import ESTIMATE as RUN_TIME
from assistant.parsing.history import plain_words, read_search
from assistant.parsing.latest import STAND_IN, latest_task
from assistant.parsing.numbers import DURATION, NUMBER, duration_minutes, tidy, to_int
from assistant.parsing.sweeps import (
    PLACEHOLDER,
    SWEEP_INTENT,
    SWEEP_REF,
    SWEEP_WORD,
    BraceGrid,
    at_a_time_of,
    brace_grid,
    metric_args,
    running_limit_of,
    sweep_id_of,
    tag_of,
    without_running_limit,
    worded_values,
)
from assistant.parsing.tags import read_tag_change
from assistant.parsing.times import blank_dates, read_times
from assistant.parsing.waits import after_hour_or_task, answered_after, read_wait_change
from scheduler.dependencies import PARENT_FIELDS
from scheduler.edits import EDITABLE_FIELDS
from scheduler.resubmit import RERUNNABLE
from scheduler.spec import MAX_SWEEP_VALUES

Kind = Literal["tool", "question", "refusal", "help", "edit"]
_I = re.I

INJECTION = re.compile(
    r"ignore\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|above|earlier|former)|disregard\s+(?:all|any|the|your|previous)"
    r"|system\s+prompt|you\s+are\s+now|developer\s+mode|jailbreak|pretend\s+(?:to\s+be|you)|new\s+instructions"
    r"|忽略(?:之前|以上|前面|上面|先前|所有)|无视(?:之前|以上|所有)|系统提示|你现在是|扮演|新的指令|越狱",
    _I,
)
PRIVILEGE = re.compile(
    r"\b(?:admin|root|sudo|superuser)\b\s*(?:rights?|access|privileges?|role|token|mode)|make\s+me\s+(?:an?\s+)?admin"
    r"|\bgive\s+(?:me|us)\s+(?:an?\s+)?(?:admin|root|sudo|superuser)\b"
    r"|\bset\s+(?:my|our|the|team\s+\w+'?s?)\s*(?:quota|budget|gpu\s+cap|cap)\s+to\b"
    r"|give\s+(?:me|us)\s+(?:more|extra|unlimited|infinite)\s+(?:quota|gpus?|budget|gpu[- ]hours)"
    r"|(?:raise|increase|"
    r"double|reset|remove|disable|bypass)\s+(?:my|our|the|team\s+\w+'?s?)?\s*(?:quota|budget|cap|limits?)"
    r"|skip\s+the\s+queue|jump\s+(?:the\s+)?queue|cut\s+in\s+line|ahead\s+of\s+everyone|(?:other|someone'?s?|another)"
    r"\s+(?:user'?s?|people'?s?|person'?s?)?\s*(?:token|password|api\s+key)|\b(?:show|give|tell|print)\b.*\b(?:token|"
    r"password|api\s+key|secret)s?\b|drop\s+(?:the\s+)?(?:database|table)|delete\s+the\s+database|shut\s*down\s+(?:the\s+)?"
    r"(?:server|cluster|scheduler|nodes?)|reboot|restart\s+the\s+(?:server|scheduler|cluster|node)|set\s+(?:my|the)\s+"
    r"priority\s+(?:of\s+)?(?:all|everyone)|管理员|root权限|提权|提高(?:我们?的?)?配额|增加(?:我们?的?)?配额|无限配额|插队|跳过队列"
    r"|别人的\s*(?:token|令牌|密码)|(?:token|令牌|密码|密钥)|删库|删除数据库|关机|重启(?:服务器|集群|调度器)",
    _I,
)
# "取消暂停" cancels a pause, so it is a release (RELEASE), not a cancel
CANCEL_VERB = re.compile(
    r"(?<![A-Za-z])(?:cancel|cancle|kill|stop|abort|terminate|delete|remove|drop|halt|scrap)(?![A-Za-z])"
    # "don't run 45", "I don't need 45" (not "don't need 4 GPUs")
    r"|\bdon'?t\s+(?:run|want|need)\s+(?=(?:task|job|#)?\s*#?\d+\b(?!\s*(?:gpus?|cards?|gb|hours?|h\b|min)))"
    r"|取消(?!暂停|挂起)|停止|停掉|杀掉|杀死|终止|干掉|删掉|删除|停了|撤销|kill掉|(?:不用|不要|别|不)(?:再)?跑了"
    r"|(?<=号)不要了|(?<=\d)不要了|从队列(?:里|中)?(?:去掉|拿掉|移除|删掉)",
    _I,
)
BULK_OTHERS = re.compile(
    r"\b(?:everyone|everybody|all\s+users|other\s+(?:people|users|teams?)|someone\s+else|another\s+team|their|his|her)"
    r"|\bteam\s+[\w.\-]+'?s?\b|\b[\w.\-]+\s+team'?s\b|\b[\w.\-]+'s\s+(?:jobs|tasks)|\ball\b.*\b(?:jobs|tasks)\b"
    r"|\bevery\s+(?:job|task)|所有人|大家|别人|其他人|其他团队|其他组|他们|她们|[\w.\-]+(?:组|团队|小组)的|全部|所有|一切",
    _I,
)
OWN = re.compile(r"\b(?:my|mine|our|ours)\b|我的|我们的|自己的|我们?(?:所有|全部)(?!人)", _I)
# one's own tasks named without a number: "did my job finish?", "我的任务跑完了吗"
MY_TASKS = re.compile(
    r"\b(?:my|our)\s+(?:jobs?|tasks?|runs?|training)\b|我们?(?:的|所有的?|全部的?)(?:任务|作业)", _I
)
# what only an admin's command does to a node: the chat points at it
NODE_ADMIN = re.compile(
    r"\b(?:drain|undrain|cordon|uncordon)\b|排空节点|下线节点"
    r"|\b(?:out\s+of|back\s+(?:in|into)|return\s+to)\s+service\b|\b(?:take|put)\b.*\boffline\b"  # an admin's
    # a maintenance planned, a node kept for a team (`nightshift node drain --at`, `node reserve`)
    # ... also one that comes round ("schedule a weekly maintenance", "每周日凌晨停机维护")
    r"|\b(?:schedule|plan|set|announce|book)\s+(?:an?\s+|the\s+)?(?:(?:daily|weekly|nightly|monthly|regular|"
    r"recurring|repeating)\s+)?maintenance\b|(?:安排|计划|设置)(?:一次|每周的?|每天的?|定期的?)?停机维护"
    r"|\b(?:reserve|book|block)\b[^.?!]*\b(?:nodes?|box|server|machine)\b[^.?!]*\bfor\s+(?:the\s+)?team\b"
    r"|\b(?:reserve|book|block)\s+(?:node\s+)?\S+\s+for\s+(?:team\s+)?\S+\s+(?:every|each)\b"
    r"|预留(?:节点|机器|服务器)|(?:节点|机器|服务器)\s*\S*\s*预留给|把\s*\S+\s*预留给\s*\S+\s*(?:团队|组)",
    _I,
)
OFF_TOPIC = re.compile(
    r"\bweather\b|\bpoem\b|\bjoke\b|\bstock\b|\bbitcoin\b|\brecipe\b|\bnews\b|\bwho\s+won\b|\btranslate\b"
    r"|\bwrite\s+(?:me\s+)?(?:an?\s+)?(?:essay|story|email|letter|song)|\bcapital\s+of\b|\bhomework\b"
    r"|天气|写诗|写一首|笑话|股票|菜谱|新闻|翻译|作文|比特币",
    _I,
)
HELP = re.compile(
    r"^\s*(?:hi|hello|hey|help|thanks|thank\s+you|what\s+can\s+you\s+do|who\s+are\s+you)\b|你好|帮助|您好|谢谢|你能(?:做|干)(?:什么|啥)|你是谁|^\s*怎么用",
    _I,
)
EXPLAIN = re.compile(
    r"\bwhy\b|\bexplain\b|what'?s\s+(?:holding|blocking)|what\s+is\s+(?:holding|blocking)|\bstuck\b|still\s+(?:pending|waiting|queued)"
    r"|what'?s\s+(?:going\s+on|wrong)|(?:been|is)\s+(?:pending|queued|waiting)\s+for"
    r"|\btaking\b.*\bso\s+long\b|怎么这么(?:久|慢)"  # "what's taking job 12 so long"
    r"|为什么|为啥|怎么还没|咋还没|卡住|卡着|原因|还在排队|怎么(?:会)?(?:挂|失败|崩|报错)|怎么回事|咋回事",
    _I,
)
# words of money and energy, in a question about a task's cost (`TASK_STATE`, `ASKS_COST`)
_COST_WORDS = (
    r"\bcost\b|\bhow\s+much\s+(?:energy|power|electricity)\b|\bkwh\b"
    r"|花了多少|多少钱|费用|电费|(?:用|耗)了?多少(?:电|度)|耗电"
)
# how one named task is doing ("status of task 5", "did #5 finish?", "任务 5 怎么样了"): explain_task
TASK_STATE = re.compile(
    r"(?<![A-Za-z])status(?![A-Za-z])|\bstate\b|how(?:\s+is|'s|\s+are)\b|how\s+did\b|what\s+happened"
    r"|\bdid\b.*\b(?:finish|succeed|fail|work|run)"
    r"|\bshow\b(?:\s+me)?\s+(?:task|job)\b|\bdetails\s+(?:of|on|for)\b|看一?下(?:任务|作业)|查(?:一下|看)(?:任务|作业)"
    r"|\bis\b.*\b(?:done|finished|running|over|complete|ok|waiting|pending|queued|blocked)\b|\bprogress\b"
    # "is 12 still alive?", "did 12 die", "12 still going?", "what's up with 12", "12号还活着吗"
    r"|\b(?:alive|dead|die|died|still\s+going)\b|what'?s\s+up\s+with\b|\bcheck\s+on\b|活着|死了"
    # "what priority is 45", "is 45 urgent?": its class, said from its own spec
    r"|\bwhat\s+priority\s+(?:is|does|has)\b|^\s*is\s+(?:(?:task|job)\s*|#)?\d+\s+(?:urgent|high|low)\s+priority\b"
    r"|^\s*is\s+(?:(?:task|job)\s*|#)?\d+\s+urgent\b"
    r"|(?:占|用)了?多少(?:显存|内存)|显存(?:占用|用了多少|多大)"
    r"|\bexit(?:ed)?\s+(?:code|status|with)\b|\breturn\s+code\b|退出码|返回码|退出状态"
    # "how long did 12 take", "how long will 12 run", "what GPUs does 12 use": its times, its node and GPUs
    r"|\bhow\s+long\s+(?:did|has|had)\b|\bhow\s+long\s+will\s+(?:(?:task|job)\s*|#)?\d+\s+(?:take|run|last)\b"
    r"|\b(?:what|which|how\s+many)\s+gpus?\s+(?:does|is|did|was)\s+(?:(?:task|job)\s*|#)?\d+"
    r"|\bare\s+(?:(?:the\s+)?(?:tasks|jobs)\s+)?#?\d+.*\b(?:done|finished|running|over|complete|ok|waiting"
    r"|pending|queued)\b"
    r"|when\s+will\b.*\b(?:finish|end|be\s+done|complete)"
    r"|怎么样|咋样|如何了|状态|情况|进展|跑完了吗|完成了吗|好了吗|结束了吗|成功了吗|失败了吗|(?:还)?在跑吗|开始跑了吗|跑得怎么样|还要多久|还要(?:跑|运行)多久|还剩多久"
    # how long a running task has left: "how much longer will 12 run", "time left on 12", "when does 12 end"
    r"|how\s+much\s+longer|how\s+long\b.*\b(?:left|remaining)\b|\btime\s+(?:left|remaining)\b"
    r"|how\s+long\s+(?:until|till|before)\b.*\b(?:done|finished|over|completed?)\b"
    r"|when\s+(?:does|did|will|would|is)\b.*\b(?:end|finish|complete|be\s+done|done)\b"
    r"|(?:跑|运行)了多久|用了多少(?:显存|卡|GPU|内存)"
    # how long an ended or running task waited, when it started: "when did 12 start", "12号等了多久"
    r"|\bwhen\s+did\b.*\b(?:start|begin|get\s+(?:a\s+)?gpus?)\b|(?:等|排|排队|等待)了多(?:久|长时间)"
    r"|什么时候(?:开始|启动|跑起来|开跑)的|how\s+long\s+(?:was|were)\b.*\b(?:queued|waiting|pending|in\s+(?:the\s+)?queue)\b"
    r"|how\s+long\s+has\b.*\b(?:been\s+)?running|how\s+much\s+(?:gpu\s+)?(?:memory|vram)\b.*\b(?:using|uses?|used)\b"
    r"|\b(?:show|tell)\s+(?:me\s+)?(?:the\s+)?(?:command|cmd|spec|details)\s+(?:of|for)\b|(?:的)?(?:命令|指令)是(?:什么|啥)"
    # "what is 31's time limit", "when is 31's deadline", "31号的优先级是什么", "31号的截止时间是什么时候"
    r"|\b(?:what|when)(?:'s|\s+is|\s+are)\s+(?:task\s*|job\s*|#)?\d+'s\s+(?:priority|time\s*limit|deadline|tags?)\b"
    r"|的(?:优先级|时间限制|时限|截止时间|标签)(?:是|有)?(?:什么|多少|几|啥|哪些)|有(?:哪些|什么)(?:标签|tag)"
    r"|what(?:'?s|\s+is)\s+(?:the\s+)?(?:time\s+limit|deadline|priority|estimate|command)\s+(?:of|for|on)\b"
    r"|(?:什么时候|何时|多久)(?:能|才能|会)?(?:跑完|结束|完成)"
    # "what's the error in 9", "what went wrong with 9", "which node is 9 on", "is 9 using the GPU"
    r"|\berrors?\b|\bwent\s+wrong\b|出错|报错|错误|\bwhich\s+(?:node|gpus?|machine|server|host)\b"
    r"|\bis\s+(?:task\s+|job\s+|#)?#?\d+\s+(?:still\s+)?using\b"
    r"|(?:在)?哪(?:个|台)(?:节点|机器|服务器)|哪(?:张|块)卡"
    # what an ended task used ("what did task 9 cost", "9号任务花了多少钱"): explain_task shows its usage
    rf"|{_COST_WORDS}|\bgpu[\s-]?hours?\b|多少(?:GPU|卡)?机?时",
    _I,
)
# a question about money or energy ("what will 9 cost", "要花多少钱"): the explain reply then says a queued
# or running task's expected energy and cost too (not in every "why is 9 waiting")
ASKS_COST = re.compile(rf"{_COST_WORDS}|\bprice\b|\bhow\s+much\s+money\b|\bspend\b|花了?多少", _I)
# a question about one of a task's settings ("what command did 12 run", "what's 12's time limit",
# "12号的优先级是什么"): the explain reply says each one asked for
ASKED_FIELDS: list[tuple[str, re.Pattern[str]]] = [
    ("command", re.compile(r"\bcommand\b|\bcmd\b|命令|指令", _I)),
    ("priority_class", re.compile(r"\bpriority\b|\burgent\b|优先级", _I)),  # "is 45 urgent?" too
    ("time_limit_minutes", re.compile(r"\btime\s*limit\b|时间限制|时限", _I)),
    ("deadline", re.compile(r"\bdeadline\b|截止", _I)),
    ("tags", re.compile(r"\btags?\b|\blabels?\b|标签", _I)),
]


def asked_fields(text: str) -> tuple[str, ...]:
    """The task settings a question names, for the explain reply to say (`ASKED_FIELDS`)."""
    return tuple(name for name, pattern in ASKED_FIELDS if pattern.search(text))


# what a task not yet sent would cost ("what would 2 GPUs for 3 hours cost tonight?",
# "两张卡跑三个小时要多少钱"): estimate_wait prices one of the size it names
COST_OF_A_SIZE = re.compile(
    r"\b(?:would|will)\b.*\bcost\b|\bhow\s+much\s+(?:would|will)\b|(?:要|得|会)花?多少钱|多少电费", _I
)
# the logs of a task: not one of the tools; the reply says where to find them
LOGS = re.compile(
    r"\blogs?\b|\boutput\b|\bstdout\b|\bstderr\b|\btail\b|\bwhat\s+(?:does|did)\b.*\bprint|日志|输出", _I
)
# runs side by side (a sweep's, a tag's): compare_results
RESULTS = re.compile(
    r"\bcompare\b|\bsweep\b.*\b(?:results?|best|metrics?)\b|\b(?:results?|best|metrics?)\b.*\bsweep\b"
    r"|\b(?:results?|metrics)\b.*\btag(?:ged)?\b|\btag(?:ged)?\b.*\b(?:results?|metrics)\b"
    r"|对比|比较|扫参.*(?:结果|最好|指标)|(?:结果|指标).*扫参|哪组.*最好|最好的一组",
    _I,
)
BEST = re.compile(r"\bbest\b|\bwinner\b|最好|最优", _I)
# "all" of one's own sweep ("cancel all tasks of sweep 4", "取消扫参4的所有任务"): no one else's
ALL_OF = re.compile(r"\ball\b|\bevery\b|全部|所有(?!人)|一切", _I)
ESTIMATE = re.compile(
    r"how\s+long\b(?!\s+is\s+the\s+(?:queue|line)\b)(?!.*\b(?:done|finished|over|completed?|left|remaining)\b)"
    r"(?!\s+(?:did|have|had|has)\s+(?:i|we|my\s+(?:team|jobs|tasks)|our\s+(?:team|jobs|tasks)"
    r"|(?:(?:task|job)\s*|#)?\d+)\s+(?:been\s+)?wait)"
    r"(?!\s+(?:was|were)\s+(?:(?:task|job)\s*|#)?\d+\b)"
    r".*\b(?:wait|until|till|before|queue|take\s+to\s+start)|\bwait(?:ing)?\s+time\b|\beta\b|how\s+soon"
    r"|when\s+(?:will|would|does|can|could|do|is)\b.*\b(?:start|run|begin|get\s+(?:a\s+)?gpus?|go|be\s+scheduled|launch)"
    r"|\bestimate\b|how\s+long\s+(?:will|would|do)\s+(?:i|we)|expected\s+(?:start|wait)"
    r"|\b(?:what|how\s+much)\s+(?:would|will|does|did)\s+it\s+cost\s+to\s+run\b"
    r"|\b(?:can|could)\s+(?:i|we)\s+(?:get|have)\b.*\b(?:gpus?|cards?|[AHVL]\d{2,3}s?)\b"
    r"|how\s+long\s+(?:for|to\s+get)\b.*\b(?:gpus?|cards?|[AHVL]\d{2,3}s?)\b"
    r"|要?等多久|等多长时间|多久(?:能|才能|可以|会)?(?:开始|轮到|跑(?!完)|运行|排到)|什么时候(?:能|会|可以|才能|才会)?(?:开始|轮到|跑(?!完)|运行|排到)(?!的)"
    r"|预计.*开始|等待时间|排多久|多久能排到|估计.*等|能(?:不能)?(?:拿到|用上|分到|排到).{0,8}(?:卡|GPU|[AHVL]\d{2,3})"
    r"|\bcan\s+(?:i|we)\s+(?:get|have)\b.{0,16}\b(?:gpus?|cards?)\b"
    r"|\bis\s+there\s+(?:room|space|capacity)\s+(?:now\s+)?for\b.*\b(?:gpus?|cards?|[AHVL]\d{2,3}s?)\b"
    r"|when\s+will\b.{0,24}\b(?:gpus?|cards?)\b.{0,12}\b(?:free|available)\b",
    _I,
)
POSITION = re.compile(
    r"where\s+(?:is|are|'s|does|do)\s+(?:my|our|task|job|the|\d|#)|\bposition\b|\bstand(?:s|ing)?\b|place\s+in\s+(?:the\s+)?(?:queue|line)"
    r"|how\s+many\s+(?:jobs|tasks|people)\s+(?:are\s+)?(?:ahead|in\s+front|before)|ahead\s+of\s+(?:me|mine|it)"
    r"|where.*\bin\s+(?:the\s+)?(?:queue|line)|排第几|第几|排在|排到哪|前面还有|队列(?:中|里)?的?位置|位置"
    r"|\bam\s+i\s+next\b|\bis\s+(?:mine|my\s+(?:job|task))\s+next\b|\bnext\s+in\s+line\b"
    r"|\bhow\s+(?:full|long|busy)\s+is\s+the\s+(?:queue|line)\b"
    r"|what'?s\s+in\s+the\s+queue|(?:what|who)\s+is\s+(?:in|waiting\s+in)\s+the\s+queue|队列里(?:有)?(?:什么|啥|哪些)"
    r"|how\s+many\s+(?:jobs|tasks)\s+(?:are\s+)?(?:queued|in\s+(?:the\s+)?(?:queue|line)|waiting)"
    r"|how\s+(?:long|big)\s+is\s+the\s+queue|队列(?:里|中)?有多少|多少个?任务在排队|排队的有多少"
    # "how does the queue look", "what does the queue look like"
    r"|\b(?:how|what)\s+does\s+the\s+queue\s+look\b"
    r"|\bis\s+the\s+queue\s+(?:long|big|full|busy)\b|队列(?:有多长|长吗|长不长)|排队的(?:人|任务)多(?:吗|不多)"
    r"|\b(?:show|see|view|list|print|display)\s+(?:me\s+)?the\s+(?:whole\s+|full\s+)?queue\b|看看?(?:一下)?队列",
    _I,
)
LIST = re.compile(
    r"\b(?:my|our|list|show|see)\b.*\b(?:jobs|tasks|runs)\b|what(?:'s|\s+is|\s+are)\s+(?:running|queued)|what\s+(?:failed|crashed"
    r"|is\s+queued|finished|succeeded)|(?:which|what)\s+(?:jobs|tasks|ones)\s+(?:do\s+i\s+have|failed|are|have|did|crashed|succeeded|finished)"
    r"|\b(?:failed|running|queued|pending|finished|completed|succeeded|cancell?ed)\s+(?:jobs|tasks|runs)\b|\bmy\s+jobs\b"
    r"|\bare\s+there\s+(?:any\s+)?(?:jobs|tasks)\s+(?:running|queued|waiting|pending)\b"
    r"|did\s+(?:anything|any\s+of\s+my\s+(?:jobs|tasks))\s+fail|我的任务|我的作业|任务列表|列出|哪些任务|失败的|在跑的|正在跑|"
    r"正在运行|排队中|排队的|已完成|跑完的|挂了|什么失败|哪些.*(?:失败|挂)|看看.*任务|(?:任务|作业)在(?:排队|跑|运行)"
    r"|(?:什么|哪些)任务(?:要|会|将)(?:跑|运行)|\b(?:what|which)\s+(?:jobs|tasks)\s+will\s+run\b"
    # "what's in my queue", "everything I have queued"; tasks named by when they were sent: "我昨天提交的任务"
    r"|\bin\s+(?:my|our)\s+queue\b|\b(?:i|we)\s+(?:have|got)\s+(?:queued|running|pending)\b"
    r"|我们?(?:昨天|今天|前天|刚才|刚刚|刚|之前|上午|下午|早上|晚上)?(?:提交|跑)的(?:任务|作业)"
    # "anything crash overnight?", "list everything running"
    r"|\b(?:anything|something|any\s+(?:jobs?|tasks?|runs?))\s+(?:crash|fail|die|break)(?:ed)?\b"
    r"|\blist\s+(?:all|everything|every\s+(?:job|task))\b|\bwhat\s+happened\b(?!\s+(?:to|with)\b)"
    r"|^\s*(?:is\s+|are\s+)?(?:there\s+)?(?:anything|something|any\s+(?:jobs?|tasks?))\s+(?:running|queued|pending|waiting)\b",
    _I,
)
# what ended while the person was away ("how did last night go?", "anything crash overnight?",
# "昨晚跑得怎么样"): night_summary, unless the question names one task
NIGHT = re.compile(
    r"\blast\s+night\b|\bovernight\b|\bwhile\s+i\s+(?:was\s+)?(?:away|asleep|sleeping|out|gone)\b"
    r"|\b(?:morning|night'?s?|nightly)\s+(?:summary|report|results?)\b|昨晚|昨天晚上|昨夜|夜里|晚上跑的|早报",
    _I,
)
QUOTA = re.compile(
    r"\bquota\b|\bbudget\b|gpu[\s-]*hours?\b.*\b(?:left|remaining)\b|how\s+(?:much|many)\s+.*\bleft\b|\ballowance\b|hours\s+left"
    r"|\bwhy\s+can'?t\s+(?:i|we)\s+(?:start|run|get)\s+(?:any\s+)?more\b"  # the team's cap or budget
    r"|\bcapped\b|\bover\s+(?:the\s+|its\s+|our\s+)?(?:budget|cap)\b|\bat\s+(?:its|our|the|my)\s+(?:gpu\s+)?cap\b"
    # "how many GPUs does my team have", "what's my GPU limit": the team's cap
    r"|\bhow\s+many\s+gpus\s+(?:does|do|can)\s+(?:my|our|the)\s+team\s+(?:have|get|use)\b|\bgpu\s+(?:limit|cap)\b"
    # "how many GPUs can I use at once", "我最多能用几张卡": the person's cap beside the team's
    r"|\bhow\s+many\s+gpus\s+(?:can|may)\s+(?:i|we)\s+(?:use|have|get|hold)\b|\bmy\s+(?:gpu\s+)?cap\b"
    r"|(?:我|每人|每个人|一个人)(?:最多|一次)(?:能|可以)?(?:用|占)几张卡"
    r"|\bfair[\s-]*share\b|公平份额|公平分配"  # one's standing, the team's and within it
    r"|配额|额度|预算|还剩多少|还有多少.*(?:机时|卡时)|剩余.*(?:机时|卡时)|(?:机时|卡时).*(?:剩|还有)",
    _I,
)
UTILIZATION = re.compile(
    r"utili[sz]ation|\busage\b|gpu[\s-]*hours|\breport\b|\bsummary\b|\bstatistics\b|\bstats\b|who\s+used"
    r"|how\s+much\s+(?:gpu\s+)?(?:time|compute)|idle\s+share|利用率|使用率|用量|报告|统计|机时|卡时|谁用.{0,4}最多|使用情况"
    r"|how\s+much\s+(?:did|have)\s+(?:we|i|my\s+team|our\s+team)\s+(?:spen[dt]|pa(?:y|id))\b|\belectricity\b"
    r"|\benergy\s+(?:use|usage|cost|bill)|电费|耗电|用了多少电"
    r"|(?:每个|各个?)(?:团队|组|人|用户).{0,6}用了多少"  # "最近一周每个团队用了多少GPU"
    r"|how\s+much\s+gpu\b.*\b(?:use[ds]?|burn(?:ed|t)?|consumed?)\b"  # "how much gpu did we burn"
    r"|\bhog(?:ging|s)?\b|\bhogged\b"  # "who's been hogging the GPUs"
    # "how busy were the GPUs", "how busy is the cluster this week": a span of time asks for a report
    r"|how\s+busy\s+(?:were|was|have|has)\b|how\s+busy\b.*\b(?:weeks?|months?|days|yesterday)\b"
    r"|what\s+did\s+(?:my\s+|our\s+|the\s+|each\s+)?(?:team|teams|we|i|everyone|everybody)\s+use\b"
    # "how much did team nlp use last week", "top users this month"
    r"|(?:how\s+much|what)\s+(?:did|has|have)\s+(?:the\s+)?(?:team\s+[\w.-]+|[\w.-]+\s+team)\s+"
    r"(?:use|used|spen[dt]|burn(?:ed|t)?)\b"
    r"|\btop\s+(?:users|teams|consumers|spenders)\b"
    # "how long did I wait yesterday", "我们这周平均等了多久": the report's waits, past ones
    r"|how\s+long\s+(?:did|have|had)\s+(?:i|we|my\s+(?:team|jobs|tasks)|our\s+(?:team|jobs|tasks))\s+(?:been\s+)?wait"
    r"|\b(?:average|mean|typical)\s+wait|平均等(?:了|待)|(?:上周|这周|本周|昨天|最近).*等了多久"
    r"|how\s+much\s+(?:did|have|has)\s+(?:we|i|my\s+team|our\s+team|each\s+team|the\s+team)\s+used?\b"
    r"|\b(?:last|this|past)\s+(?:week|month)'?s\s+(?:numbers|figures)\b"
    r"|how\s+much\s+(?:has|have|did)\s+(?:we|i|my\s+team|our\s+team|the\s+team)\s+(?:spen[dt]|cost)\b"
    r"|\b(?:team|our|my)'?s?\s+(?:cost|costs|spend(?:ing)?|bill)\b|花了多少钱|花费|开销",
    _I,
)
CLUSTER = re.compile(
    r"how\s+busy|\bgpus?\b.*\b(?:status|free|available|idle|busy|load|usage|memory|utili[sz]ation)|(?<![A-Za-z])(?:free|idle|"
    r"available)(?:\s+|的)?(?:gpus?|cards?|卡|[AHVL]\d{2,3}s?)(?![A-Za-z0-9])"  # also "free的gpu吗"
    r"|\bcluster\b.*\b(?:busy|load|full|free)\b|\bload\s+on\s+the\s+(?:cluster|gpus|nodes|servers?)\b|\b[AHVL]\d{2,3}s?\b.*\b(?:free|idle|available)\b"
    r"|cluster\s+status|status\s+of\s+the\s+(?:cluster|gpus|nodes)|which\s+gpus|nvidia-smi"
    r"|\b(?:biggest|largest|smallest|fastest|newest)\s+(?:gpus?|cards?)\b|最大的(?:卡|显卡|GPU)"
    r"|what(?:'s|\s+is)\s+(?:using|on|running\s+on|eating|hogging|filling|taking)\s+(?:up\s+)?(?:the\s+)?gpu"
    r"|\bis\s+node\s+\S+\s+(?:down|up|alive|dead|ok|online|offline)\b|\bnodes?\s+status\b"
    r"|what\s+gpus\s+(?:does|do|are)\b|\bgpus\s+(?:does|do)\s+(?:the|we|this)\b"
    r"|\b(?:any(?:one|body)|some(?:one|body)|who(?:'s|\s+is))\s+using\b"
    r"|\b(?:show|list|see|view)\s+(?:me\s+)?(?:the\s+|all\s+(?:the\s+)?|our\s+)?gpus\b"
    r"|谁在用\s*(?:卡|显卡|gpu)|(?:显卡|卡|gpu)\s*(?:被|让)谁(?:占|用)"
    r"|(?:卡|gpu)(?:多|够用?)(?:吗|么|不)"  # "现在卡多吗"
    r"|anything\s+free|what\s+can\s+i\s+run\s+(?:right\s+)?now|\bnodes?\b.*\b(?:up|status|alive)|空闲|空卡|显卡状态|gpu状态|集群状态|集群.*(?:怎么样|情况)|[AHVL]\d{2,3}.*空|卡.*(?:空|忙|占用|闲)"
    r"|显存.*(?:占用|剩|情况)|哪些卡|有没有卡|忙不忙|忙吗|繁忙|几张卡.*(?:空|闲|可用)|gpu.*(?:情况|使用)"
    # "is gpu-02 down", "which node is least busy": a node named as hosts are ("gpu-02", "node-a")
    r"|\bis\s+(?:the\s+)?[A-Za-z][\w.]*[-\d][\w.\-]*\s+(?:down|up|alive|dead|online|offline)\b"
    r"|\b(?:least|most)\s+(?:busy|loaded|used)\b|\bwhich\s+(?:node|server|machine|host)s?\s+(?:is|are|has|have)\b"
    # "how full are the GPUs", "how many GPUs are in use", "who's on the GPUs", "卡都被占了吗"
    r"|how\s+(?:full|loaded|occupied)\b.*\b(?:gpus|cluster|cards|nodes|servers?|machines?)\b"
    r"|how\s+many\s+(?:of\s+the\s+)?gpus\s+(?:are\s+)?(?:in\s+use|taken|used|occupied|left|busy)\b"
    r"|\bwho(?:'s|\s+is)\s+on\s+the\s+(?:gpus|cluster|cards)\b|(?:卡|显卡|gpu)都?被占"
    # "how much memory is free on box-1", "哪台机器显存最多"
    r"|\bhow\s+much\s+(?:gpu\s+)?memory\s+is\s+(?:free|left|available|used)\b"
    r"|哪(?:台|个)(?:机器|节点|服务器).{0,4}(?:显存|卡|空)"
    # "when is the next maintenance", "is box-1 reserved?", "哪些节点预留了", "什么时候停机维护"
    r"|\b(?:when|what)\b[^.?!]*\bmaintenance\b|\bmaintenance\s+(?:window|schedule)s?\b"
    r"|\b(?:is|are)\s+there\s+(?:an?\s+|any\s+)?(?:\w+\s+)?maintenance\b"
    r"|\bis\s+(?:node\s+)?\S+\s+reserved\b|\b(?:which|any)\s+(?:nodes?|servers?|machines?)\b[^.?!]*\breserved\b"
    r"|(?:什么时候|何时|哪天|几点)[^。？?]*停机维护|停机维护[^。？?]*(?:什么时候|何时|吗)|(?:哪些|哪个)(?:节点|机器|服务器)[^。？?]*预留",
    _I,
)
# a question about the nodes' reservations or maintenance, whatever span of time it names
NODE_WINDOWS = re.compile(r"\breserved\b|\bmaintenance\b|预留|停机维护", _I)
# running an earlier task again ("rerun 12", "run task 12 again", "12号再跑一遍"): its id names the task
RERUN = re.compile(
    r"\bre-?(?:run|submit|queue|launch)\b|\brestart\s+(?=(?:task|job|#)?\s*#?\d)|\b(?:run|submit|queue|launch|start|do)\b(?=.{0,40}?\bagain\b)"
    r"|\bonce\s+more\b|\bretry\s+(?=(?:task|job|#))|^\s*(?:please\s+)?retry\s+(?=\d+\s*$|\d+\s+(?!times?\b))"
    r"|\bsame\s+as\s+(?=(?:task|job|#)?\s*\d)|\blike\s+(?=(?:task|job|#)\s*\d)"
    r"|\b(?:clone|copy|duplicate)\s+(?=(?:task|job|#)?\s*\d)"  # "the same as 12"
    # "put 12 back in the queue"
    r"|\b(?:put|send)\b(?=.{0,24}\bback\s+(?:in|into|on|to)\s+(?:the\s+)?queue\b)"
    r"|重新排队|重新(?:放|加)(?:回|进|入)队列|放回队列"
    r"|重跑|重新(?:跑|运行|提交|执行)(?:一次|一遍|一下)?|再(?:跑|运行|提交|执行)(?:一次|一遍)|重来一?(?:次|遍)?"
    r"|(?<=号)一样|(?<=\d)一样|(?:和|跟|同)(?=(?:任务|作业)?\s*#?\d+\s*号?(?:任务)?一样)",  # 和12号一样
    _I,
)
SUBMIT_VERB = re.compile(
    r"\b(?:run|execute|launch|submit|queue\s+up|kick\s+off|schedule|train|start\s+(?:a|my|the)\s+(?:job|task|training|run))\b"
    r"|跑|运行|执行|提交|训练|启动",
    _I,
)
# "cancelled tasks", "上周取消的任务": a status, where CANCEL_VERB would read an order to cancel
CANCELLED = re.compile(r"cancell?ed|取消了|取消的|被取消|已取消", _I)
STATUS_WORDS: list[tuple[str, re.Pattern[str]]] = [
    ("failed", re.compile(r"fail|crash|error|broke|失败|挂了|出错|报错|崩", _I)),
    ("running", re.compile(r"running|in\s+progress|在跑|运行中|正在运行|正在跑", _I)),
    (
        "queued",
        re.compile(
            r"queued|waiting|pending|in\s+(?:the|my|our)\s+queue|will\s+run|排队|等待|(?:要|会|将)(?:跑|运行)",
            _I,
        ),
    ),
    ("succeeded", re.compile(r"succeed|finished|completed|\bdone\b|成功|完成|跑完", _I)),
    ("cancelled", CANCELLED),
]
DAYS: list[tuple[int, re.Pattern[str]]] = [
    (1, re.compile(r"\btoday\b|\byesterday\b|24\s*hours|今天|昨天|一天", _I)),
    (30, re.compile(r"\bmonth\b|30\s*days|本月|这个月|上个月|一个月|30天", _I)),
    (14, re.compile(r"two\s+weeks|2\s+weeks|fortnight|两周|两个星期", _I)),
    (7, re.compile(r"\bweek\b|7\s*days|本周|这周|上周|一周|这个星期|七天|7天", _I)),
]
# "past 10 days", "last 3 weeks", "过去两个月": a count of days, weeks (7 days) or months (30 days)
N_DAYS = re.compile(
    rf"(?:last|past|previous)\s+(?P<n>{NUMBER})\s+(?P<unit>days?|weeks?|months?)"
    rf"|(?:过去|最近|近)\s*(?P<z>{NUMBER})\s*个?(?P<zunit>天|周|星期|礼拜|月)",
    _I,
)
UNIT_DAYS = {"week": 7, "周": 7, "星期": 7, "礼拜": 7, "month": 30, "月": 30}
BY = [
    (
        "user",
        re.compile(
            r"by\s+(?:user|person|people)|per[\s-]+(?:user|person)|each\s+user|\bwho\b|\btop\s+(?:users|people)\b"
            r"|按用户|每个用户|每个人|按人|谁",
            _I,
        ),
    ),
    (
        "gpu",
        re.compile(
            r"by\s+(?:gpu|card|device)|per\s+(?:gpu|card)|each\s+gpu|按卡|每张卡|按gpu|每块卡|按显卡", _I
        ),
    ),
    (
        "team",
        re.compile(
            r"by\s+team|per\s+team|each\s+team|\btop\s+teams\b|\bteam\s+[\w.-]+\s+(?:use|used|spen[dt])\b"
            r"|\b(?!my\b|our\b|your\b)[\w.-]+\s+team\s+(?:use|used|spen[dt])\b"
            r"|按团队|各团队|每个团队|按组|各组|各个团队",
            _I,
        ),
    ),
]
_SLUG = r"([A-Za-z0-9][A-Za-z0-9_.\-]*)"
TEAM = [
    re.compile(rf"\bteam\s+{_SLUG}", _I),
    re.compile(rf"\b{_SLUG}'s\s+(?:quota|budgets?|cap|usage|gpu[\s-]*hours)\b", _I),  # "vision's quota"
    re.compile(rf"(?:团队|组)\s*{_SLUG}"),
    re.compile(rf"{_SLUG}\s*(?:组|团队|小组)"),
    re.compile(rf"\b{_SLUG}\s+team\b", _I),
]
_NOT_TEAMS = {
    "our",
    "my",
    "the",
    "whole",
    "this",
    "your",
    "a",
    "each",
    "per",
    "by",
    "every",
    "other",
    "have",
    "has",
    "had",
    "is",
    "still",
    "quota",
    "budget",
    "left",
    "usage",
    "status",
    "got",
    "hours",
    "gpu",
    # "is my team over budget", "why is my team capped", "my team can't start": words after "team"
    *(
        "over",
        "under",
        "near",
        "at",
        "out",
        "close",
        "capped",
        "blocked",
        "limited",
        "allowed",
        "using",
        "used",
    ),
    *(
        "running",
        "waiting",
        "been",
        "was",
        "are",
        "can",
        "cannot",
        "could",
        "will",
        "should",
        "members",
        "and",
    ),
    *("team", "teams", "everyone", "everybody", "anyone", "someone", "its", "their", "his", "her"),
}


@dataclass
class Reading:
    """The offline model's understanding of one request."""

    kind: Kind
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    more: list[dict[str, Any]] = field(default_factory=list)  # further calls of `tool`, one per task asked
    # what to do once `tool` (a list) has found the task the request named as its latest ("cancel my last
    # job"): this reading, with the found id for `latest.STAND_IN`
    then: Reading | None = None

    def with_task(self, task_id: int) -> Reading:
        """This reading with `task_id` (a task's or a sweep's) wherever it holds the stand-in of one not yet
        known."""

        def put(args: dict[str, Any]) -> dict[str, Any]:
            return {k: task_id if k in _TASK_ARGS and v == STAND_IN else v for k, v in args.items()}

        return replace(self, args=put(self.args), more=[put(args) for args in self.more])

    def needs_a_task(self) -> bool:
        """True when an argument still holds the stand-in of a task not yet known."""
        return any(args.get(k) == STAND_IN for args in (self.args, *self.more) for k in _TASK_ARGS)


_TASK_ARGS = ("task_id", "like_task", "sweep_id")


MAX_CANCELLED_AT_ONCE = 20  # tasks one cancel card may name; more is `nightshift cancel --mine`'s work
MAX_CHANGED_AT_ONCE = 10  # tasks one request may change, a card each; more is a sweep's or the CLI's work


def _tool(tool: str, /, **args: Any) -> Reading:
    """A call of `tool` with the arguments given (None ones left out); positional-only, so a spec's own
    `name` field can be one of them ("rename 12 to exp4")."""
    return Reading("tool", tool, {k: v for k, v in args.items() if v is not None})


def _first_id(text: str) -> int | None:
    ids = task_ids(text)
    return ids[0] if ids else None


# how to give a job an API key or token of one's own ("how do I pass my HF token to my job", "where do I put
# my wandb key", "怎么把 token 给任务用"): keep it as a secret
SECRETS_HOW = re.compile(
    r"\bhow\s+(?:do|can|should|would)\s+(?:i|we)\s+(?:give|pass|use|set|store|provide|add|keep|get)\b"
    r"[^?.!]{0,60}\b(?:tokens?|api[\s_-]*keys?|keys?|secrets?|passwords?|credentials?)\b"
    r"|\bwhere\s+(?:do|should|can)\s+(?:i|we)\s+(?:put|keep|store|set)\b[^?.!]{0,40}\b(?:tokens?|api[\s_-]*keys?|"
    r"keys?|secrets?|credentials?)\b|\bhow\s+do\s+secrets\s+work\b"
    r"|(?:怎么|如何|怎样)[^？?。]{0,16}(?:token|密钥|秘钥|令牌|api\s*key)|(?:token|密钥|秘钥|令牌|api\s*key)[^？?。]{0,10}"
    r"(?:怎么|如何|怎样)(?:传|给|设置|用|放)",
    _I,
)


def _secrets_help(rest: str) -> Reading | None:
    """How to give a job a key of one's own, asked with no command: what a secret is and how to set one."""
    return Reading("help", reason="secrets") if SECRETS_HOW.search(rest) else None


# the team's, not one's own: "cancel all our jobs", "取消我们组所有的任务"
_TEAM_WIDE = re.compile(r"\b(?:our|ours)\b|我们", _I)


def _cancel_all_mine(text: str) -> Reading:
    """ "cancel all my queued jobs", "取消我所有排队的任务", "cancel everything": one's own live tasks (of the
    status named), on one card that lists them, never a teammate's; a question for the team's ("all our
    jobs") or for tasks that ended ("all my failed jobs")."""
    status = _status(text)
    if _TEAM_WIDE.search(text) or status not in (None, "queued", "running"):
        return Reading("question", reason="bulk_own")
    return _tool("cancel_tasks", mine=True, status=status)


def _refusal(text: str) -> Reading | None:
    if INJECTION.search(text):
        return Reading("refusal", reason="injection")
    # "remove the limit on sweep 3": how many of one's own sweep run at once, no quota or privilege; "with my
    # HF_TOKEN": a secret of one's own for one's job, named, never shown
    checked = SECRET_FOR_JOB.sub(" ", text)
    if PRIVILEGE.search(without_running_limit(checked) if SWEEP_REF.search(checked) else checked):
        return Reading("refusal", reason="privilege")
    if CANCEL_VERB.search(text) and BULK_OTHERS.search(text) and not _one_own_sweep(text):
        if OWN.search(text) and not re.search(
            r"team\s+[\w.\-]+|[\w.\-]+\s*(?:组|团队)的|别人|others?|everyone", text, _I
        ):
            return _cancel_all_mine(text)
        return Reading("refusal", reason="cross_team")
    if OFF_TOPIC.search(text):
        return Reading("refusal", reason="out_of_scope")
    return None


def _one_own_sweep(text: str) -> bool:
    """True when a bulk-sounding cancel is of one sweep by its number and of no one else's ("cancel all
    tasks of sweep 4", "取消扫参4的所有任务"): the sweep's card, not a refusal."""
    return SWEEP_REF.search(text) is not None and not BULK_OTHERS.search(ALL_OF.sub(" ", text))


def _about_a_sweep(text: str, now: datetime) -> Reading | None:
    """A request about a sweep by its number ("cancel sweep 5" is no task 5), or about the runs of a tag:
    release, run its failed tasks again (a card), cancel (a card), hold, change its queued tasks or how
    many of them run at once (a card), compare its runs, or how it is doing. A sweep named without its
    number: its status is the latest sweep's; for anything else, which one?"""
    sweep_id = sweep_id_of(text)
    if sweep_id is None:
        return _about_runs(text)
    limited = _running_limit_change(text, now, sweep_id)
    if limited is not None:
        return limited
    if cleared_fields(text).fields:  # "remove the time limit of sweep 3": a change, never a cancel
        change = _change_reading(SWEEP_REF.sub(" ", text), now, "change_sweep", sweep_id=sweep_id)
        if change is not None:
            return change
    acted = _act_on_a_sweep(text, now, sweep_id)
    if acted is not None:
        return acted
    if CHANGE_VERB.search(text):
        change = _change_reading(SWEEP_REF.sub(" ", text), now, "change_sweep", sweep_id=sweep_id)
        if change is not None:
            return change
    wanted = metric_args(text)
    if RESULTS.search(text) or BEST.search(text) or "metric" in wanted:
        return _tool("compare_results", sweep_id=sweep_id, **wanted)
    if SWEEP_TASKS.search(text) and not COUNTING.search(text):  # "the failed runs of sweep 4": those tasks
        status = _status(text)
        return _tool("list_tasks", sweep_id=sweep_id, **({"status": status} if status else {}))
    return _tool("sweep_status", sweep_id=sweep_id)


def _act_on_a_sweep(text: str, now: datetime, sweep_id: int) -> Reading | None:
    """Release, rerun, cancel (a card) or hold of the whole sweep, by the verb the request uses; None for
    none of them."""
    if RELEASE.search(text):
        return _tool("release_sweep", sweep_id=sweep_id)
    if RERUN.search(text) or RETRY.search(text):
        return _rerun_sweep(text, now, sweep_id)
    if CANCEL_VERB.search(text):
        if _status(text) is not None:  # "cancel the queued runs of sweep 4": a sweep is cancelled whole
            return Reading("question", args={"sweep_id": sweep_id}, reason="part_of_a_sweep")
        return _tool("cancel_sweep", sweep_id=sweep_id)
    if HOLD.search(text):
        return _tool("hold_sweep", sweep_id=sweep_id)
    return None


RETRY = re.compile(r"\bretry\b|\btry\b.{0,40}\bagain\b|重试|再试", _I)  # a sweep's runs, beside RERUN


def _rerun_sweep(text: str, now: datetime, sweep_id: int) -> Reading:
    """rerun_sweep of the sweep's tasks that ended as the request says ("rerun the failed runs of sweep 4",
    "重跑扫参4取消的任务"; all that ended for "all of sweep 4"; failed ones when it names none); a question
    for tasks that have not ended ("rerun the queued runs of sweep 4") or for a rerun with changes ("rerun
    sweep 4 tonight": they run again as they were, then a change of the sweep)."""
    rest = RETRY.sub(" ", RERUN.sub(" ", SWEEP_REF.sub(" ", text)))
    if _change_reading(rest, now, "change_sweep", sweep_id=sweep_id) is not None:
        return Reading("question", args={"sweep_id": sweep_id}, reason="rerun_as_it_was")
    named = [name for name, pattern in STATUS_WORDS if pattern.search(text)]
    statuses = [name for name in named if name in RERUNNABLE]
    if named and not statuses:
        return Reading("question", args={"sweep_id": sweep_id}, reason="rerun_ended_only")
    if not statuses and ALL_OF.search(text):
        statuses = list(RERUNNABLE)
    return _tool("rerun_sweep", sweep_id=sweep_id, status=statuses or None)


# a sweep's tasks themselves, not its counts: "show the failed runs of sweep 4", "扫参4失败的任务"
SWEEP_TASKS = re.compile(
    r"\b(?:list|show|which|what|see|display)\b.*\b(?:tasks|runs|jobs)\b"
    r"|\b(?:tasks|runs|jobs)\b.*\b(?:failed|crashed|succeeded|finished|running|queued|pending|cancell?ed)\b"
    r"|\b(?:failed|crashed|running|queued|pending|succeeded|finished|cancell?ed)\s+(?:tasks|runs|jobs)\b"
    r"|(?:失败|运行中|在跑|排队|成功|完成|取消)的(?:任务|作业)|(?:列出|看看|显示).*(?:任务|作业)",
    _I,
)
COUNTING = re.compile(r"\bhow\s+many\b|多少|几个", _I)


def _running_limit_change(text: str, now: datetime, sweep_id: int) -> Reading | None:
    """change_sweep of how many of the sweep's tasks run at once ("run sweep 3 two at a time", "让扫参3同时跑
    4个"; "no limit", "不限制同时运行数量": none), with any other change the request asks ("make sweep 3 high
    priority, 2 at a time"); None when it says nothing of it, or also cancels, holds or releases the sweep
    (those read as before: "cancel all of sweep 3 at once" is a cancel)."""
    limit = running_limit_of(text)
    if limit is None:
        return None
    asked = cleared_fields(limit.rest).rest  # "remove its time limit, 2 at a time" cancels nothing
    if any(verb.search(asked) for verb in (CANCEL_VERB, HOLD, RELEASE)):
        return None
    change = _change_reading(SWEEP_REF.sub(" ", limit.rest), now, "change_sweep", sweep_id=sweep_id)
    if change is not None and change.kind != "tool":  # it also asks to change what runs or where
        return change
    return _tool("change_sweep", **(change.args if change else {"sweep_id": sweep_id}), **limit.args())


def _about_runs(text: str) -> Reading | None:
    """The runs of a tag compared ("compare the runs tagged exp7 by val_loss"); how one's latest sweep is
    doing when asked without its number ("how is my sweep doing?", "我的扫参怎么样了"); a question back
    for any other act on a sweep named without its number ("cancel my sweep"); None for anything else."""
    acts = [CANCEL_VERB, HOLD, RELEASE, RERUN, RETRY]
    if SWEEP_WORD.search(text):
        if any(pattern.search(text) for pattern in acts):
            return Reading("question", reason="need_sweep_id")
        if RESULTS.search(text) or BEST.search(text):  # "results of my last sweep": the latest one's
            return _tool("compare_results", **metric_args(text))
        if TASK_STATE.search(text):
            return _tool("sweep_status")
    tag = tag_of(text)
    if tag is not None and (RESULTS.search(text) or BEST.search(text)):
        return _tool("compare_results", tag=tag, **metric_args(text))
    return None


def _team(text: str) -> str | None:
    for pattern in TEAM:
        for match in pattern.finditer(text):
            name = match.group(1).lower()
            if name and name not in _NOT_TEAMS and not name.isdigit():
                return name
    return None


def _utilization(text: str) -> Reading:
    days = 7
    explicit = N_DAYS.search(text)
    if explicit:
        unit = (explicit.group("unit") or explicit.group("zunit")).lower().rstrip("s")
        days = (to_int(explicit.group("n") or explicit.group("z") or "7") or 7) * UNIT_DAYS.get(unit, 1)
    else:
        for value, pattern in DAYS:
            if pattern.search(text):
                days = value
                break
    by = next((name for name, pattern in BY if pattern.search(text)), None)
    return _tool("utilization_report", days=days, by=by)


def _estimate(text: str, now: datetime) -> Reading:
    """estimate_wait of the task `text` names, or of the size, model, node and run time it describes (a
    number read as one of those, "2 A100s", names no task)."""
    task_id = _first_id(read_fields(blank_dates(text, now))[1])
    if task_id is not None:
        return _tool("estimate_wait", task_id=task_id)
    asked = _spec_args(text, now)
    sized = _tool(
        "estimate_wait",
        gpus=asked.get("gpus"),
        gpu_memory_gb=asked.get("gpu_memory_gb"),
        estimated_minutes=asked.get("estimated_minutes"),  # "a 2-GPU job that runs 3 hours"
        gpu_model=asked.get("gpu_model"),  # "could I get 2 A100s now?"
        node=asked.get("node"),
    )
    return _tool("estimate_wait", **sized.args, offpeak=True) if asked.get("offpeak") else sized


def _prices_a_size(rest: str, now: datetime) -> bool:
    """True for a question of what a task not yet sent would cost, naming its size or run time ("what
    would 2 GPUs for 3 hours cost tonight?"); a task of the queue named by number is explain's."""
    if not COST_OF_A_SIZE.search(rest) or task_ids(rest):
        return False
    return bool({"gpus", "gpu_memory_gb", "estimated_minutes"} & _spec_args(rest, now).keys())


# a schedule that repeats ("every night", "daily", "每晚"): nightshift runs a task once
RECURRING = re.compile(
    r"\bevery\s+(?:night|day|morning|evening|hour|week|weekday|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b"
    r"|\b(?:daily|nightly|weekly|hourly)\b|每天|每晚|每天晚上|每周|每小时|每个?(?:晚上|早上|星期)",
    _I,
)


# the same command several times ("3 times", "5 runs of", "跑三遍"): a sweep needs what differs between runs
REPEAT = re.compile(
    rf"{REPEAT_AT.pattern}|\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?:runs|copies)\s+of\b"
    r"|(?:跑|运行|执行)\s*(?:\d+|[两二三四五六七八九十])\s*(?:次|遍)|(?:\d+|[两二三四五六七八九十])\s*(?:次|遍)",
    _I,
)
# a second command after the first, outside it: "run python a.py and python b.py", "然后跑 b.py"
ANOTHER_COMMAND = re.compile(
    r"(?:\band(?:\s+then)?\b|\bthen\b|\balso\b|\bafter\s+(?:that|it)\b|\bafterwards\b|;|,|，|然后|再|和|之后|以后)"
    r"\s*(?:(?:also\s+)?run\s+|跑\s*|运行\s*)?" + STRONG.pattern,
    re.I,
)


# a notice asked for when a task ends ("email me when it's done", "let me know when 12 finishes", "12号跑完
# 通知我"): nightshift sends them to the targets an admin set per user or team, not per task
NOTICE_WHEN_DONE = re.compile(
    r"(?:\b(?:notify|e-?mail|mail|ping|message|text|alert|page|slack|wake)\s+me\b|\blet\s+me\s+know\b"
    r"|\bsend\s+me\s+(?:an?\s+)?(?:e-?mail|mail|message|notification|text)\b)"
    r"(?=.*\b(?:when|once|if|after)\b.*\b(?:done|finish(?:es|ed)?|ends?|ended|complete[sd]?|fails?|failed"
    r"|crash(?:es|ed)?|succeeds?|starts?|started|over|ready)\b)"
    r"|\b(?:notify|e-?mail|ping|alert)\s+me\b\s*(?:at\s+the\s+end|on\s+(?:completion|failure))"
    r"|(?:跑完|完成|结束|失败|开始|好了)[了后以之]*.{0,4}?(?:通知|提醒|告诉|发邮件给|邮件通知|叫|喊)我"
    # the request's last words ("run python a.py and email me", "..., notify me on slack", "发邮件给我"): when
    # it is done, as said nowhere else ("let me know" at the end is only a way of asking)
    r"|\b(?:notify|e-?mail|mail|ping|message|text|alert|page|slack)\s+me\b(?:\s+(?:on|via|by|over)\s+[\w-]+)?"
    r"\s*[.!]?\s*$|(?:通知|提醒|发邮件给|发消息给|邮件通知)我\s*[。！!]?\s*$",
    _I,
)

# a GPU asked for by rank ("on the biggest GPU", "the fastest card", "最大的卡"): a spec says memory, a model
BIGGEST_GPU = re.compile(
    r"\b(?:biggest|largest|best|fastest|strongest|most\s+powerful|newest|beefiest)\s+(?:gpus?|cards?"
    r"|graphics\s+cards?|nodes?|box|machines?|servers?|one)\b"
    r"|(?:最大|最好|最快|最强|最新|最猛)的?\s*(?:卡|显卡|GPU|gpu|机器|节点|服务器)",
    _I,
)

# what a request asks that no spec field says: a card would drop it without a word, so a question back
_NO_FIELD_SAYS = (
    (RECURRING, "recurring"),  # "every night": one run now
    (GPU_CHOICE, "gpu_count_choice"),  # "on 2 or 4 GPUs": which
    (GPU_INDEX, "gpu_index"),  # "on gpu 3": the scheduler picks GPUs
    (HOST_RESOURCE, "host_resources"),  # "16 CPUs and 64GB of RAM": nothing reserves them
    (BIGGEST_GPU, "biggest_gpu"),  # "on the biggest GPU": its memory or model
    (NOTICE_WHEN_DONE, "notices"),  # "and email me when done": notices go where an admin set them
)


def _submit(command: str, rest: str, now: datetime, several: bool = False) -> Reading:
    """submit_task of `command` with what else the request asks; a sweep when the command has brace lists
    ("--lr {1e-3,1e-4}"), "2 at a time" its `max_running`. A single task "2 at a time" has nothing to limit:
    a question back, rather than a card that drops or misreads it."""
    if several:  # one card per task: say so rather than drop the other commands
        return Reading("question", reason="one_command")
    unsaid = next((reason for pattern, reason in _NO_FIELD_SAYS if pattern.search(rest)), None)
    if unsaid is not None:
        return Reading("question", reason=unsaid)
    after = after_hour_or_task(rest)
    if after is not None:  # "run a.py after 12": task 12, or 12 o'clock? ("even if it fails": the task)
        if not EITHER_WAY.search(rest):
            return Reading("question", args={"task_id": after}, reason="parent_or_hour")
        rest = answered_after(rest, "task")
    if REPEAT.search(read_fields(rest)[1]):  # "3 times" (not "retry 3 times"): one card would run it once
        return Reading("question", reason="repeat_runs")
    grid = brace_grid(command)
    if grid is not None and any(len(values) > MAX_SWEEP_VALUES for values in grid.grid.values()):
        return Reading("question", reason="sweep_too_long")  # "{0..100000000}": narrower, or a step
    worded = _worded_grid(grid.command if grid else command, rest, set(grid.grid) if grid else set())
    if isinstance(worded, Reading):
        return worded
    if worded is not None:
        sweep, rest = worded
        grid = BraceGrid(grid.command if grid else command, {**(grid.grid if grid else {}), **sweep})
    at_once = at_a_time_of(rest)
    if at_once is not None and grid is None:
        return Reading("question", reason="at_a_time_single")
    args = {"command": command, **_spec_args(rest if at_once is None else at_once.rest, now)}
    if grid is not None:
        args.update(command=grid.command, sweep=grid.grid)
    if at_once is not None:
        args["max_running"] = at_once.max_running
    return Reading("tool", "submit_task", args)


# two values or more, listed: "0.1, 0.01", "1,2,3", "0.1 and 0.01", "0.1 和 0.01"
_VALUE_LIST = re.compile(r"\d[\w.+\-]*(?:\s*(?:,|，|、|\band\b|\bor\b|和|与|或)\s*|\s+)[-+]?\.?\d")


def _worded_grid(
    command: str, rest: str, named: set[str]
) -> tuple[dict[str, list[Any]], str] | Reading | None:
    """The values the request's words give the command's `{name}` placeholders ("python train.py --lr {lr}
    for lr in 1e-3 1e-4", "--seed {seed}, seeds 1 to 5") and the request with them blanked; a question
    when a placeholder gets none, or when the words ask to try several values of a command that has no
    place for them ("try lr 0.1 and 0.01 with python train.py": which flag?). None when neither."""
    wanted = [m["name"] for m in PLACEHOLDER.finditer(command) if m["name"] not in named]
    if not wanted:
        unread = read_fields(rest)[1]  # "on 2 GPUs with 40GB" are the task's, not values to try
        if not named and SWEEP_INTENT.search(rest) and _VALUE_LIST.search(unread):
            return Reading("question", reason="sweep_values")
        return None
    sweep: dict[str, list[Any]] = {}
    for name in dict.fromkeys(wanted):
        found = worded_values(name, rest)
        if found is None:
            return Reading("question", reason="sweep_values")
        sweep[name] = found.values
        rest = rest[: found.span[0]] + " " * (found.span[1] - found.span[0]) + rest[found.span[1] :]
    return sweep, rest


def _spec_args(text: str, now: datetime) -> dict[str, Any]:
    """The spec fields and times a request asks for (its command already taken out; what it asks to take
    away, "no time limit", is no value: `cleared_fields` reads it)."""
    text = cleared_fields(text).rest
    fields, _ = read_fields(blank_dates(text, now))  # no number of a date is a GPU count or a task
    rest = text
    for start, end in fields.spans:
        rest = rest[:start] + " " * (end - start) + rest[end:]
    when = read_times(rest, now)
    args: dict[str, Any] = dict(fields.values)
    if when.not_before is not None:
        args["not_before"] = when.not_before.isoformat()
    if when.deadline is not None:
        args["deadline"] = when.deadline.isoformat()
    if when.offpeak:
        args["offpeak"] = True
    return args


# the off-peak window itself ("when is off-peak?", "is it off-peak now?", "谷时是几点"), not a task's start
OFFPEAK_WINDOW = re.compile(
    r"\b(?:what|when)(?:'s|\s+(?:is|are|does|do))\s+(?:the\s+)?off[\s-]?peak\b(?!\s+(?:task|job|run)s?\b)"
    r"|\boff[\s-]?peak\s+(?:windows?|hours|period)\b|\bis\s+it\s+(?:now\s+)?off[\s-]?peak\b"
    r"|when\s+(?:is|are)\s+(?:power|electricity)\s+(?:cheap|cheaper|cheapest)\b|\bcheapest\s+(?:time|hours?)\b"
    # "what's the electricity price now", "is now a cheap time to run", "现在电价贵吗"
    r"|\b(?:electricity|power)\s+(?:price|tariff|rate)s?\b.*\b(?:now|today)\b|\bis\s+(?:now|it)\s+(?:a\s+)?cheap\b"
    r"|现在(?:的)?电(?:价|费)|现在(?:电)?便宜吗"
    r"|谷时(?:是|从)?(?:几点|什么时候|哪些时段|时段)|什么时候(?:是)?谷时|现在是(?:不是)?谷时|电(?:价|费)?什么时候(?:最)?便宜"
    r"|什么时候电(?:价|费)?(?:最)?便宜",
    _I,
)


# how the queue is ordered ("how does the scheduler decide who goes first", "is the scheduling fair",
# "why does bob always get the GPUs first", "调度规则是什么"), asked of no task
SCHEDULING_HOW = re.compile(
    r"\bhow\s+does\s+(?:the\s+)?(?:scheduler|scheduling|queue|nightshift|aging|fair[\s-]?share|backfill(?:ing)?)"
    r"\s+(?:work|decide|choose|pick|order|rank|sort|prioriti[sz]e)"
    r"|\bhow\s+(?:is|are)\s+(?:the\s+)?(?:order|queue|jobs|tasks)\s+(?:decided|ordered|chosen|ranked|sorted)\b"
    r"|\bwho\s+(?:goes|runs|gets\s+(?:the\s+)?gpus?)\s+first\b|\b(?:is|are)\s+(?:the\s+)?(?:scheduling|scheduler|queue)"
    r"\s+fair\b|\bwhat\s+does\s+(?:priority\s+)?(?:urgent|high|low|normal)(?:\s+priority)?\s+(?:do|mean)\b"
    r"|\balways\s+gets?\s+(?:the\s+)?gpus\s+first\b"
    r"|调度(?:规则|策略|算法|机制|顺序)|排队(?:规则|顺序)|谁先跑|怎么排队的|别人的任务(?:总是|老是)?先跑",
    _I,
)


def _about_the_order(rest: str) -> Reading | None:
    """How the queue is ordered, asked of no task (the reply says the rule and where one task's parts are)."""
    if SCHEDULING_HOW.search(rest) and not task_ids(rest):
        return Reading("help", reason="scheduling")
    return None


def _about_the_window(rest: str) -> Reading | None:
    """The off-peak windows themselves, asked about with no task named (the reply says them and now)."""
    return (
        Reading("help", reason="offpeak_window")
        if OFFPEAK_WINDOW.search(rest) and not task_ids(rest)
        else None
    )


# where a task's files are ("where are the checkpoints of 12", "how do I get my results", "模型权重保存在哪")
OUTPUTS = re.compile(
    r"\b(?:checkpoints?|ckpts?|output\s+(?:files?|folder|dir(?:ectory)?)|model\s+(?:files?|weights)|weights"
    r"|artifacts?)\b.*\b(?:where|find|get|saved?|stored|written|located)\b"
    r"|\b(?:where|find|get)\b.*\b(?:checkpoints?|ckpts?|outputs|output\s+(?:files?|folder|dir(?:ectory)?)"
    r"|model\s+(?:files?|weights)|weights|artifacts?)\b|where\b.*\b(?:saved|written|stored)\b|how\s+do\s+i\s+get\s+(?:my\s+)?(?:results?|outputs?|files?)"
    r"|(?:结果|检查点|模型(?:文件|权重)?|权重|输出文件|输出目录|checkpoints?|ckpts?)\s*(?:文件)?(?:保存|存|放)?在哪"
    r"|(?:保存|存)在哪(?:里|儿)?",
    _I,
)


def _about_outputs(rest: str) -> Reading | None:
    """Where a task's files are (of the task it names, when it names one)."""
    if not OUTPUTS.search(rest):
        return None
    task_id = _first_id(rest)
    return Reading("help", args={} if task_id is None else {"task_id": task_id}, reason="outputs")


# a shell on a GPU ("an interactive session", "a GPU for debugging", "srun --pty"): no command to queue
INTERACTIVE = re.compile(
    r"\binteractive(?:ly)?\b|\b(?:a|an)\s+(?:gpu|card)\s+(?:to|for)\s+(?:debug|debugging|play|experiment|test|try)"
    r"|\b(?:a|an|one|two|\d)\s+(?:gpus?|cards?)\s+for\s+(?:an?|one|\d+)\s+(?:hours?|h|minutes?|min)\s+to\s+debug\b"
    r"|\b(?:shell|terminal|ssh)\s+(?:on|into|to)\s+(?:a\s+|the\s+)?(?:gpu|node|machine)\b|--pty\b"
    r"|交互式?|调试用的?(?:卡|GPU)|给我一张卡(?:调试|试试|玩)",
    _I,
)


def _notice_when_done(rest: str) -> Reading | None:
    """A notice asked for when a task ends, with no command: where notices go and how to wait for one."""
    return Reading("help", reason="notices") if NOTICE_WHEN_DONE.search(rest) else None


def _interactive(rest: str) -> Reading | None:
    """A shell on a GPU asked for, with no command: what to queue instead (a notebook server)."""
    return Reading("help", reason="interactive") if INTERACTIVE.search(rest) else None


# holding a queued task back or letting it go ("hold 12", "暂停12号", "release 12", "取消暂停12号")
RELEASE = re.compile(
    r"\b(?:release|resume|unhold|un-hold|unpause|un-pause)\b|\blet\s+(?:task\s*|job\s*)?#?\d+\s+(?:run|start|go)\b"
    r"|放行|取消(?:暂停|挂起)|恢复|继续跑|可以(?:开始)?跑了",
    _I,
)
HOLD = re.compile(r"\b(?:hold|pause|suspend)\b|暂停|挂起|先别跑|(?:先)?放一放|先放着", _I)
# holding or releasing every task one has ("pause all my tasks", "暂停我所有的任务"): one at a time
BULK_HOLD = re.compile(
    r"\b(?:hold|pause|suspend|release|resume|unpause|unhold)\s+(?:all|every(?:thing|\s+(?:task|job))|my\s+(?:tasks|jobs)"
    r"|(?:all|each)\s+(?:of\s+)?my)\b"
    r"|(?:暂停|挂起|放行|恢复)\s*(?:我的?)?\s*(?:所有|全部)|(?:所有|全部)的?(?:任务|作业)?\s*(?:都|先)?\s*(?:暂停|挂起|放行|恢复)",
    _I,
)
# answers to a card in words: the card's own buttons do it ("yes", "ok", "确认"; "no", "算了")
CONFIRM_WORDS = re.compile(
    r"^\s*(?:yes|yep|yeah|y|ok(?:ay)?|sure|confirm(?:ed)?|go(?:\s+ahead)?|do\s+it|submit(?:\s+it)?|looks\s+good"
    r"|lgtm|确认|好的?|可以|行|提交吧?|没问题)\s*[.!。！]*\s*$",
    _I,
)
DROP_WORDS = re.compile(
    r"^\s*(?:(?:no|nope|n)|(?:(?:no|nope)[\s,.!]+)?(?:cancel(?:\s+(?:that|it))?|never\s*mind|drop(?:\s+(?:it|that))?"
    r"|forget\s+(?:it|that))|不要了?|算了|取消吧?|不用了?)\s*[.!。！]*\s*$",
    _I,
)
# "now" for a card that was to wait: it may start at once
RIGHT_AWAY = re.compile(r"\b(?:now|right\s+(?:away|now)|immediately)\b|马上|立刻|立即|现在就", _I)


def follow_up_to_card(text: str, now: datetime) -> Reading | None:
    """A message right after a card, about that card: "yes" / "no" (the card's buttons do that), or the
    spec changes it asks for ("make it 4 GPUs", "actually tonight", "改成高优先级") as `Reading("edit")`
    args (None for a field to leave out). None when it asks for something else."""
    if CONFIRM_WORDS.match(text):
        return Reading("help", reason="confirm_card")
    if DROP_WORDS.match(text):
        return Reading("help", reason="drop_card")
    if find_command(text) is not None or understand(text, now).kind == "tool":
        return None
    changes: dict[str, Any] = _spec_args(text, now)
    changes.update(dict.fromkeys(cleared_fields(text).fields))  # "no time limit": left out of the card
    if RIGHT_AWAY.search(text) and not {"not_before", "offpeak"} & changes.keys():
        changes.update(not_before=None, offpeak=None)
    return Reading("edit", args=changes) if changes else None


# a task named right after a verb ("cancel task 2", "kill 3."), or right before one in Chinese ("把2号取消")
_TASK_AFTER_VERB = re.compile(
    r"\s*(?:the\s+)?(?:(?:task|job)\s*#?\s*\d+|#\d+|(?:任务|作业)?\s*#?\s*\d+\s*号|(?:任务|作业)\s*#?\s*\d+"
    r"|\d+\s*(?:$|[,.;!?，。；！？]|\s+(?:and|then|too|first|please|as\s+well)\b))",
    _I,
)
_TASK_BEFORE_VERB = re.compile(
    r"(?:\d+\s*号|(?:任务|作业)\s*#?\s*\d+)\s*(?:任务|作业)?\s*(?:也|都|给我)?\s*$"
)


# a request that opens with what to do to which task: "stop 5, it is stuck", "hold 5 until I check it"
_OPENS_WITH_AN_ACTION = re.compile(
    r"^\s*(?:please\s+)?(?:cancel|kill|stop|abort|terminate|delete|hold|pause|release|resume|unpause)"
    r"\s+(?:the\s+)?(?:task\s*|job\s*)?#?\d+\b(?!\s*(?:gpus?|gb|hours?|min))",
    _I,
)


def _acts_on_a_task(rest: str) -> bool:
    """True when `rest` (a request's words besides its command) also cancels, holds or releases a task it
    names: "… and cancel task 2", "then kill 3", "再把2号取消" (a second request, not part of the first), or
    opens with doing so ("stop 5, it is stuck")."""
    if _OPENS_WITH_AN_ACTION.match(rest) and not NOT_CANCEL.search(rest):
        return True
    for pattern in (CANCEL_VERB, HOLD, RELEASE):
        for verb in pattern.finditer(rest):
            if _TASK_AFTER_VERB.match(rest, verb.end()) or _TASK_BEFORE_VERB.search(rest, 0, verb.start()):
                return True
    return False


def _asks_for_an_estimate(rest: str) -> bool:
    """True when the request asks how long it waits ("how long will I wait?", "estimate for 12"); "with an
    estimate of 30 minutes" gives a task its run time instead (the words a spec field reads do not ask)."""
    if not ESTIMATE.search(rest):
        return False
    unread = rest
    for run_time in RUN_TIME:
        unread = run_time.sub(lambda given: " " * len(given.group()), unread)
    return bool(ESTIMATE.search(unread))


def _rerun(rest: str, command: str | None, now: datetime) -> Reading | None:
    """ "run 12 again", "rerun task 12 on 2 GPUs", "12号再跑一遍": task 12's spec again (`like_task`),
    changed by what else the request asks (a new command too) and without what it takes away ("without
    the time limit", "不限时": `clear`)."""
    verb = RERUN.search(rest)
    if verb is None:
        return None
    text = rest[: verb.start()] + " " + rest[verb.end() :]
    named = TASK_ID.search(text) or BARE_NUMBER.search(text)
    if named is None:  # "run it again": which one? (with a command, it is a new task of its own)
        return Reading("question", reason="need_task_id") if command is None else None
    task_id = int(next(g for g in named.groups() if g))
    parents = read_fields(text)[0].values
    waits_for = [*parents.get("depends_on", []), *parents.get("depends_on_any", [])]
    if task_id in waits_for:  # "again after 12"
        return None
    if names_several_tasks(text) and not waits_for:  # "rerun 12 and 13", "rerun 12-15": a card each
        return _rerun_each(rest, text, command, now)
    if MORE_GPUS.search(text):  # "run 12 again with 2 more GPUs": how many in all?
        return Reading("question", args={"task_id": task_id}, reason="gpus_in_all")
    return _run_again(rest, [task_id], text[: named.start()] + " " + text[named.end() :], command, now)


def _rerun_each(rest: str, text: str, command: str | None, now: datetime) -> Reading:
    """The same rerun of each task named ("rerun 12 and 13 on 2 GPUs", "rerun 12-15"): a card each, confirmed
    one after another; a question for more than `MAX_CHANGED_AT_ONCE` or with a new command for them."""
    ids = task_ids(text)
    if command is not None or len(ids) > MAX_CHANGED_AT_ONCE or MORE_GPUS.search(text):
        return Reading("question", reason="one_rerun")
    return _run_again(rest, ids, ID_RANGE.sub(" ", ID_LIST.sub(" ", TASK_ID.sub(" ", text))), None, now)


def _run_again(rest: str, ids: list[int], asked: str, command: str | None, now: datetime) -> Reading:
    """Each of `ids` again, changed by what `asked` (the request without its task ids) says and without
    what it takes away ("without the time limit", "不限时": `clear`); as it is, a requeue ("requeue 12", the
    tool sees whether it still runs)."""
    args = _spec_args(asked, now)
    clear = [name for name in cleared_fields(asked).fields if name not in args]
    if REQUEUE.search(rest) and not (args or clear or command):
        return _for_each_task(_tool("requeue_task", task_id=ids[0]), ids)
    again = _tool("submit_task", like_task=ids[0], command=command, clear=clear or None, **args)
    return _for_each_task(again, ids, key="like_task")


# "requeue 12", "put 12 back in the queue", "把12号重新排队": a running task stopped and queued again
# (`requeue_task`, which runs an ended one again instead)
REQUEUE = re.compile(
    r"\bre-?queue\b|\b(?:put|send)\b(?=.{0,24}\bback\s+(?:in|into|on|to)\s+(?:the\s+)?queue\b)"
    r"|重新排队|重新(?:放|加)(?:回|进|入)队列|放回队列",
    _I,
)


# the head of the queue ("move 9 to the front", "把9号放到最前面"): the top class, which anyone may set
# ("skip the queue", "插队" ask to pass everyone: `PRIVILEGE` refuses them)
_TO_THE_FRONT = r"\b(?:to|at)\s+the\s+(?:front|top|head)\b|(?:放|排|挪|移)到(?:队列)?(?:最)?前面"
# changing a queued task ("make 12 urgent", "run 12 tonight instead", "start 12 now", "把12号改成高优先级")
CHANGE_VERB = re.compile(
    r"\b(?:change|make|set|bump|raise|lower|move|reschedule|switch|update|start|run|give|push|limit|cap"
    r"|prioriti[sz]e|rename)\b|放到|排到|移到|改名"
    r"|改成|改为|改到|调到|调成|调高|调低|提高|降低|提到|推迟|挪到|换成|现在就|马上|立刻|延长到|延到"
    r"|最多(?:只)?(?:跑|运行)|最长(?:跑|运行)|只(?:让它)?(?:跑|运行)",  # "31号最多跑3小时": its time limit
    _I,
)
PRIORITY_UP = re.compile(
    r"\b(?:raise|bump|increase)\b.*\bpriority\b|优先级\s*(?:调高|提高|调到最高|提到最高)"
    r"|\bbump\s+(?:up\s+)?(?:task|job|#)?\s*#?\d|\bprioriti[sz]e\b|" + _TO_THE_FRONT,
    _I,
)
# more GPUs for a task sent already ("give 45 one more GPU", "给45号再加一张卡")
MORE_GPUS = re.compile(
    r"\b(?:one|two|\d+)\s+more\s+(?:gpus?|cards?)\b|\b(?:add|another|extra)\s+(?:(?:a|an|one|two|\d+)\s+)?"
    r"(?:more\s+)?(?:gpus?|cards?)\b|\bmore\s+gpus\b|(?:再|多)?加(?:一|两|几|\d+)?张(?:卡|显卡|gpu)|多(?:一|两|\d+)张卡",
    _I,
)
# a class said of a task with no verb ("45 can wait", "no rush on 45", "45号不急", "45号加急"): a change of it
PRIORITY_SAID = re.compile(
    r"\bcan\s+wait\b(?!\s+(?:for|until|till|on|after)\b)|\bno\s+rush\b|\b(?:is|are)(?:\s+not|n't)?\s+urgent\b"
    r"|不急|不着急|不用急|可以晚点|加急|(?<!不)紧急",
    _I,
)
PRIORITY_DOWN = re.compile(
    r"\b(?:lower|decrease|reduce|drop)\b.*\bpriority\b|优先级\s*(?:调低|降低|调到最低)", _I
)


def _change(rest: str, now: datetime) -> Reading | None:
    """A change to one queued task's timing or priority (a change card to confirm); a pointer when it asks
    to change what runs or where; None when the text is not such a request."""
    ids = task_ids(_without_times(rest, now))  # "start after 13" names an hour, not task 13
    if ids and MORE_GPUS.search(rest):  # "give 45 one more GPU": what it runs on stays
        return Reading("help", reason="change_fixed")
    if not any(pattern.search(rest) for pattern in (CHANGE_VERB, PRIORITY_UP, PRIORITY_SAID)):
        return None
    if not ids and (PRIORITY_UP.search(rest) or PRIORITY_DOWN.search(rest)):
        return Reading("question", reason="need_task_id")  # "raise my priority": of which task?
    if names_several_tasks(rest) and (first := _change_reading(rest, now, "change_task", task_id=ids[0])):
        if first.kind == "tool" and len(ids) > MAX_CHANGED_AT_ONCE:
            return Reading("question", reason="one_change")
        return _for_each_task(first, ids)  # "make 12 and 13 urgent"
    if len(ids) != 1:
        return None
    return _change_reading(rest, now, "change_task", task_id=ids[0])


def _for_each_task(first: Reading, ids: list[int], key: str = "task_id") -> Reading:
    """The same request of each of `ids` ("make 12 and 13 urgent", "rerun 12-15": `key` like_task): a call,
    and so a card, per task, confirmed one after another; `first` (that of `ids[0]`) as it is when it is no
    call but a pointer."""
    if first.kind != "tool" or len(ids) < 2:
        return first
    return replace(first, more=[{**first.args, key: task_id} for task_id in ids[1:]])


def _change_of_waits(rest: str) -> Reading | None:
    """A change of which tasks a queued task waits for ("make 12 wait for 13", "12 no longer needs to wait
    for 13"): a change card; a question when "after 13" may be an hour; None when it asks no such change."""
    change = read_wait_change(rest) if not RERUN.search(rest) else None  # "run 12 again after 13": a new task
    if change is None:
        return None
    if change.hour_or_task:
        return Reading("question", args={"task_id": change.after}, reason="parent_or_hour")
    if change.wait_for_nothing:
        return _tool("change_task", task_id=change.task_id, clear=list(PARENT_FIELDS))
    if change.stop_waiting_for:
        return _tool("change_task", task_id=change.task_id, stop_waiting_for=change.stop_waiting_for)
    if change.also and change.spec_field == "depends_on":
        return _tool("change_task", task_id=change.task_id, also_wait_for=change.parents)
    return _tool("change_task", task_id=change.task_id, **{change.spec_field: change.parents})


def _change_of_tags(rest: str) -> Reading | None:
    """Labels added to a task or taken away ("tag 12 with exp7", "把12号的标签exp7去掉"): a change card;
    None when the request asks no such change."""
    change = read_tag_change(rest)
    if change is None:
        return None
    if change.remove:
        return _tool("change_task", task_id=change.task_id, remove_tags=change.remove)
    return _tool("change_task", task_id=change.task_id, add_tags=change.add)


def _without_times(text: str, now: datetime) -> str:
    """`text` with the times of day and dates it names blanked (their numbers are no task ids)."""
    for start, end in read_times(text, now).spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _change_reading(text: str, now: datetime, tool: str, **which: int) -> Reading | None:
    """The change a request asks of a queued task or of a sweep's (`tool` with `which` one, the fields read
    and those it takes away as `clear`: "drop the time limit"); a pointer when it asks to change what runs
    or where; None when it asks no change."""
    clear = cleared_fields(text).fields
    args = _spec_args(text, now)
    if "priority" not in args and PRIORITY_UP.search(text):
        top = re.search(r"\bhighest\b|\btop\b|最高|" + _TO_THE_FRONT, text, _I)
        args["priority"] = "urgent" if top else "high"
    elif "priority" not in args and PRIORITY_DOWN.search(text):
        args["priority"] = "low"
    if args.keys() - set(EDITABLE_FIELDS):
        return Reading("help", reason="change_fixed")
    start_now = bool(RIGHT_AWAY.search(text)) and not {"not_before", "offpeak"} & args.keys()
    if not args and not start_now and not clear:
        return None
    return _tool(tool, **which, start_now=True if start_now else None, clear=clear or None, **args)


# more time on a task's limit ("give task 5 4 more hours", "extend 5 by 2 hours", "给5号多加4小时"): relative
MORE_TIME = re.compile(
    r"\b(?:more|extra|additional|another)\b|\bextend\b.*\bby\b|\badd\b"
    r"|多加|再加|加上|多给|再给|延长(?!到)|延时|加时|续时|续期",
    _I,
)
# a limit said outright ("extend 5's time limit to 6 hours", "时限延长到6小时"): a change of the field itself
LIMIT_TO = re.compile(
    r"\bto\s+(?:\d|an?\b|one\b|two\b|three\b|four\b|five\b|six\b|ten\b|twelve\b)|到|改成|改为|设为|设成", _I
)
_MORE_BEFORE_UNIT = re.compile(
    r"\s+(?:more|extra|additional)\s+(?=(?:hours?|hrs?|minutes?|mins?|days?)\b)", _I
)
NOT_TIME = re.compile(r"\bgpus?\b|\bcards?\b|\bmemory\b|\bvram\b|\bretr(?:y|ies)\b|显存|卡|重试", _I)


def _more_time(rest: str) -> Reading | None:
    """More time on one task's limit ("give task 5 4 more hours": change_task with `more_minutes`, its
    limit plus that); None when the request is not one."""
    text = _MORE_BEFORE_UNIT.sub(" ", rest)  # "4 more hours": a duration of 4 hours
    ids = task_ids(DURATION.sub(" ", text))  # "give 5 4 more hours": task 5, not 4
    if not 0 < len(ids) <= MAX_CHANGED_AT_ONCE or not MORE_TIME.search(rest):
        return None
    if LIMIT_TO.search(rest) or NOT_TIME.search(rest):
        return None
    minutes = duration_minutes(ID_LIST.sub(" ", TASK_ID.sub(" ", text)))
    if minutes is None or minutes <= 0:
        return None
    return _for_each_task(_tool("change_task", task_id=ids[0], more_minutes=tidy(minutes)), ids)


def _clear(rest: str, now: datetime) -> Reading | None:
    """A change that takes a field of one task away ("drop the time limit of task 5", "取消5号的截止时间":
    change_task with `clear`, never a cancel); which task, when it names none; None when it takes none."""
    if not cleared_fields(rest).fields:
        return None
    if RERUN.search(rest):  # "rerun 12 without a time limit", "remove 12's limit and rerun it": a new task
        return _rerun(rest, None, now)
    ids = task_ids(rest)
    if not ids:
        return Reading("question", reason="need_task_id")
    if len(ids) > MAX_CHANGED_AT_ONCE:
        return Reading("question", reason="one_change")
    first = _change_reading(rest, now, "change_task", task_id=ids[0])
    return None if first is None else _for_each_task(first, ids)


def _status(text: str) -> str | None:
    """The task status a list asks for ("failed", "在跑的"), or None for all."""
    return next((name for name, pattern in STATUS_WORDS if pattern.search(text)), None)


# held back ("my held tasks", "the paused ones", "暂停的任务"): queued, and out of the queue until released
HELD_TASKS = re.compile(
    r"\b(?:held|paused|on\s+hold|suspended)\b|暂停(?:了|中)?的|挂起(?:了|中)?的|被暂停", _I
)


def _status_reading(text: str) -> Reading:
    if HELD_TASKS.search(text):
        return _tool("list_tasks", held=True)
    return _tool("list_tasks", status=_status(text))


PAST_TENSE = re.compile(r"\b(?:did|was|were|had)\b|昨天|上周|上个月|之前", _I)


def _history(text: str, rest: str, command: str | None, now: datetime) -> Reading | None:
    """A search of the tasks sent before ("what did I run yesterday?", "runs of train.py last week", "上周的
    train.py", "tasks tagged exp7"): list_tasks with its span of time, name, tag or node (and a status); None
    when the request is no such search, or is one another tool answers (last night, usage, quota)."""
    if NIGHT.search(rest) or UTILIZATION.search(rest) or QUOTA.search(rest):
        return None
    if (CANCEL_VERB.search(rest) and not CANCELLED.search(rest)) or BULK_HOLD.search(rest):
        return None
    if _asks_for_an_estimate(rest) and not PAST_TENSE.search(rest):  # "when could a job on box-2 start"
        return None
    search = read_search(text, command, now, listing=bool(LIST.search(rest)))
    if search is None or task_ids(search.without_period(rest)):  # "what did 12 do yesterday": one task
        return None
    status = _status(plain_words(text))
    return Reading("tool", "list_tasks", {**({"status": status} if status else {}), **search.args(now)})


# "don't cancel 5", "别取消5号": no cancel at all ("别跑了", don't run it any more, is one: CANCEL_VERB)
NOT_CANCEL = re.compile(
    r"\b(?:don'?t|do\s+not|never|no\s+need\s+to|not)\s+(?:\w+\s+)?"
    r"(?:cancel|kill|stop|abort|terminate|delete|remove|drop)\b"
    r"|(?:别|不要|不用|不必|无需|没必要)(?:再)?(?:取消|停止|停掉|杀掉|删掉|删除|终止|撤销)",
    _I,
)
# what a cancel verb may take away from a task instead of the task itself: "drop the priority of 5"
_FIELD_OF_A_TASK = re.compile(
    r"\s+(?:(?:the|its|my|this|that|(?:task|job)s?\s*#?\d+'?s|#?\d+(?:\s*(?:,|\band\b|&)\s*#?\d+)*'s)\s+)*"
    r"(?P<field>priority|dependenc(?:y|ies)|parents?|(?:gpu\s+)?memory(?:\s+requirement)?|vram|gpus?"
    r"|node(?:\s+requirement)?|command|env(?:ironment)?(?:\s+variables?)?|conda(?:\s+env)?|docker(?:\s+image)?"
    r"|image|workdir|tags?|labels?|name)\b",
    _I,
)


def _cancel(rest: str, now: datetime) -> Reading | None:
    """A cancellation of the task `rest` names (a question when it names none); None when it asks none. A
    verb that takes a field away ("drop the priority of 5", "remove the memory requirement from 5") or is
    negated ("don't cancel 5") is no cancel."""
    verb = CANCEL_VERB.search(rest)
    if verb is None:
        return None
    if NOT_CANCEL.search(rest):
        return Reading("help", reason="no_cancel")
    ids = task_ids(rest)
    field = _FIELD_OF_A_TASK.match(rest, verb.end())
    if field is not None:
        if field["field"].lower() == "priority" and len(ids) == 1:
            return _change_reading(rest, now, "change_task", task_id=ids[0])
        if field["field"].lower().startswith(("tag", "label", "name")):
            return Reading("question", reason="unclear")
        return Reading("help", reason="change_fixed")
    if len(ids) > MAX_CANCELLED_AT_ONCE:  # "cancel 1-500": `nightshift cancel --mine` shows them first
        return Reading("question", reason="bulk_own")
    if len(ids) > 1:  # "cancel 3, 4 and 5": one card for the three, not a card for 3 alone
        return _tool("cancel_tasks", task_ids=ids)
    if not ids and re.search(r"\b(?:everything|all)\b|全部|所有", rest, _I):  # "cancel everything queued"
        return _cancel_all_mine(rest)
    return _tool("cancel_task", task_id=ids[0]) if ids else Reading("question", reason="need_task_id")


def understand(text: str, now: datetime) -> Reading:
    """Classify `text` and read the arguments of the tool it needs (or say what is missing). A task named as
    one's latest ("cancel my last job") is found first: a list of one's own tasks, then the request."""
    latest = latest_task(text)
    if latest is None:
        return _understand(text, now)
    reading = _understand(latest.text, now)
    if not reading.needs_a_task() or reading.tool in _LATEST_BY_ITSELF:  # read as it was written
        return _understand(text, now)
    if latest.sweep:  # "cancel my last sweep": the latest sweep first
        return Reading("tool", "sweep_status", then=reading)
    status = {"status": latest.status} if latest.status else {}
    return Reading("tool", "list_tasks", {"mine": True, **status}, then=reading)


_LATEST_BY_ITSELF = ("sweep_status", "compare_results")  # without a number, they take the latest sweep


def _understand(text: str, now: datetime) -> Reading:
    """`understand` of a request that names its tasks by number (or names none)."""
    found = find_command(text)
    rest = remove_span(text, found.start, found.end) if found else text
    early = (
        (None if found else _secrets_help(rest))
        or _refusal(rest)
        or (
            None
            if found
            else _about_a_sweep(rest, now)
            or _about_the_window(rest)
            or _about_the_order(rest)
            or _about_outputs(rest)
            or _interactive(rest)
            or _notice_when_done(rest)
            or _change_of_waits(rest)
            or _change_of_tags(rest)
        )
    )
    if early:
        return early
    if (found or RERUN.search(rest)) and _acts_on_a_task(rest):  # "run X and cancel task 2": one at a time
        return Reading("question", reason="one_request")
    if EXPLAIN.search(rest) and not ESTIMATE.search(rest) and not _acts_on_a_task(rest):
        return _why(rest, with_command=found is not None)
    # an ISO date's numbers name no task: "what happened on 2026-12-05" is no question about task 2026
    state = _task_state(ISO_DATE.sub(" ", rest)) if not found and TASK_STATE.search(rest) else None
    if state is not None:
        return state
    cleared = _clear(rest, now) if not found else None
    if cleared is not None:
        return cleared
    listing = _history(text, rest, found.command if found else None, now)
    order = listing or (_cancel(rest, now) if not found else None)
    if order is not None:
        return order
    if _asks_for_an_estimate(rest) or (not found and _prices_a_size(rest, now)):
        return _estimate(rest, now)
    again = _rerun(rest, found.command if found else None, now)
    if again is not None:
        return again
    change = (_more_time(rest) or _change(rest, now)) if not found else None
    if change is not None:
        return change
    reading = _question(rest) if not found else None
    if reading is not None:
        return reading
    if found:
        several = len(fenced_commands(text)) > 1 or ANOTHER_COMMAND.search(rest) is not None
        return _submit(found.command, rest, now, several=several)
    return _no_tool(rest)


ISO_DATE = re.compile(r"(?<![\d-])\d{4}-\d{1,2}-\d{1,2}(?![\d-])")


def _task_state(rest: str) -> Reading | None:
    """How a task stands ("is 12 done?": explain_task), or one's own tasks named without a number ("did my
    job finish?": the list, of the status it names); None when the request is another."""
    if not task_ids(rest):
        if not MY_TASKS.search(rest):
            return None
        return _status_reading(rest)
    if ESTIMATE.search(rest) or LOGS.search(rest) or _acts_on_a_task(rest):  # "stop 5, it is stuck": a cancel
        return None
    return _explain(rest, task_ids(rest))


def _why(rest: str, *, with_command: bool) -> Reading:
    """A why question: of the tasks it names (explain_task), of last night's ends ("why did my jobs fail
    last night?"), of the team's cap or budgets ("why can't I start more jobs?"); else which task?"""
    ids = task_ids(rest)
    if ids:
        return _explain(rest, ids)
    if NIGHT.search(rest) and not with_command:
        return _tool("night_summary")
    if QUOTA.search(rest) and not with_command:
        return _tool("quota_status", team=_team(rest))
    if STILL_WAITING.search(rest) and not with_command:  # "why is my job stuck?": each queued one's reason
        return _tool("queue_position")
    return Reading("question", reason="need_task_id")


# a task not started yet, asked about without its number: the queue answers for each queued one
STILL_WAITING = re.compile(
    r"\bstuck\b|\b(?:not|isn'?t|aren'?t|never)(?:\s+\w+){0,3}?\s+(?:running|started|starting)\b"
    r"|\b(?:hasn'?t|haven'?t)(?:\s+\w+){0,3}?\s+started\b"
    r"|\bstill\s+(?:queued|waiting|pending|in\s+(?:the\s+)?queue)\b|卡住|还?没(?:有)?(?:跑|开始|运行)|还在排队",
    _I,
)


MAX_EXPLAINED = 5  # tasks one request may have explained, each in a call of its own


def _explain(rest: str, ids: list[int]) -> Reading:
    """explain_task for the task `rest` names, or one call for each of several ("why are 12-15 waiting",
    "are 12 and 13 done"); a question when it names more than `MAX_EXPLAINED`."""
    if len(ids) == 1 or not names_several_tasks(rest):
        return _tool("explain_task", task_id=ids[0])
    if len(ids) > MAX_EXPLAINED:
        return Reading("question", reason="too_many_explained")
    return Reading("tool", "explain_task", {"task_id": ids[0]}, more=[{"task_id": i} for i in ids[1:]])


def _no_tool(rest: str) -> Reading:
    """A request no tool answers: where to look instead, or what is missing."""
    if NODE_ADMIN.search(rest):
        return Reading("help", reason="node_admin")
    hold_ids = task_ids(rest) if HOLD.search(rest) or RELEASE.search(rest) else []
    if len(hold_ids) > MAX_CANCELLED_AT_ONCE or (
        not hold_ids and BULK_HOLD.search(rest)
    ):  # "pause all my tasks"
        return Reading("question", reason="one_hold")
    if hold_ids:  # "hold 12-15": one call per task, each acting at once as the Hold button does
        tool = "release_task" if RELEASE.search(rest) else "hold_task"
        return Reading("tool", tool, {"task_id": hold_ids[0]}, more=[{"task_id": i} for i in hold_ids[1:]])
    if RESULTS.search(rest):
        return Reading("help", reason="results")
    if SUBMIT_VERB.search(rest):
        return Reading("question", reason="need_command")
    if HELP.search(rest):
        return Reading("help", reason="help")
    if LOGS.search(rest):  # where the logs are: of the task it names, when it names one
        task_id = _first_id(rest)
        return Reading("help", args={} if task_id is None else {"task_id": task_id}, reason="logs")
    return Reading("question", reason="unclear")


def _question(rest: str) -> Reading | None:
    """Read-only questions (no command in the request): last night, position, quota, GPUs, utilization,
    lists."""
    if BULK_HOLD.search(rest):  # "pause all my tasks": one card each, not the list of them
        return Reading("question", reason="one_hold")
    if NIGHT.search(rest) and not task_ids(rest):
        return _tool("night_summary")
    if POSITION.search(rest) and not LOGS.search(rest):  # "where is the output of #12?": its logs
        return _tool("queue_position", task_id=_first_id(rest))
    if QUOTA.search(rest) and not re.search(r"显存|\bmemory\b|\bvram\b", rest, _I):
        return _tool("quota_status", team=_team(rest))
    if CLUSTER.search(rest) and (
        NODE_WINDOWS.search(rest)  # "is box-1 reserved every week?": the nodes' reservations and maintenance
        or not re.search(  # a span of time asks for a report, not the GPUs now
            r"\b(?:weeks?|months?|days?|report|yesterday)\b|本周|报告|过去|最近|昨天"
            r"|\b(?:usage|utili[sz]ation)\b.*\btoday\b|\btoday'?s\s+(?:usage|utili[sz]ation)|今天.*(?:用量|利用率|使用率)",
            rest,
            _I,
        )
    ):
        return _tool("cluster_status")
    if UTILIZATION.search(rest):
        return _utilization(rest)
    if LIST.search(rest):
        return _status_reading(rest)
    return None
