"""The off-peak window in words, for "when is off-peak?", "is it off-peak now?", "谷时是几点": the cluster's
windows, whether now is inside one and until when, or when the next starts."""

from __future__ import annotations

from datetime import datetime

from scheduler.policy.windows import current_window, next_window_start, parse_windows


def offpeak_window_words(windows_text: str, now: datetime, lang: str) -> str:
    """`Off-peak (cheap power) is 23:00-07:00, cluster time. It is off-peak now, until 07:00.` (or when the
    next window starts), and what "tonight" does with it; `now` is in the cluster's zone."""
    try:
        windows = parse_windows(windows_text)
    except ValueError:
        windows = ()
    zh = lang == "zh"
    if not windows:
        return (
            "这个集群没有设置谷时（低价电）时段：说“今晚跑”的任务有空闲 GPU 就会开始。"
            if zh
            else 'This cluster sets no off-peak (cheap power) window: a task asked to run "tonight" starts '
            "as soon as GPUs are free."
        )
    labels = ", ".join(window.label() for window in windows)
    zone = now.tzinfo
    assert zone is not None
    held = current_window(windows, now.timestamp(), zone)
    if held is not None:
        until = datetime.fromtimestamp(held[1], zone).strftime("%H:%M")
        now_en, now_zh = f"It is off-peak now, until {until}.", f"现在就是谷时，到 {until} 为止。"
    else:
        start_s = next_window_start(windows, now.timestamp(), zone)
        start = datetime.fromtimestamp(start_s, zone).strftime("%H:%M") if start_s is not None else "—"
        hours = (start_s - now.timestamp()) / 3600 if start_s is not None else 0.0
        now_en = f"It is {now:%H:%M} now: the next window starts at {start} (in {hours:.1f} h)."
        now_zh = f"现在是 {now:%H:%M}，下一个谷时 {start} 开始（{hours:.1f} 小时后）。"
    if zh:
        return (
            f"谷时（低价电）时段：{labels}（集群时间）。{now_zh}"
            "说“今晚跑”的任务只在谷时内开始，并尽量在谷时内跑完；卡片和预计里的电费按各时段电价计算。"
        )
    return (
        f'Off-peak (cheap power) is {labels}, cluster time. {now_en} A task asked to run "tonight" starts '
        "only inside it, and only if its estimate lets it finish there when it can; cards and estimates "
        "price its energy at each hour's rate."
    )
