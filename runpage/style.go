package runpage

// Style is the pages' one stylesheet (a run's page, flower ui's index):
// plain, readable, printable, with a dark mode; no font is fetched. The
// font stacks end in CJK fonts, so a page's Chinese (labels under zh, a
// run's own text under either) is drawn where one is installed.
const Style = style

const style = `
:root { --fg:#1d1d1f; --muted:#6b6b70; --bg:#ffffff; --panel:#f5f5f7; --line:#d2d2d7; --accent:#2f6fdf;
  --near:#c98a00; --at:#d1343a; --cut:#7a4fd0; --handoff:#1f8f4e; --degraded:#d1343a; --retry:#e0701b; --writing:#7a4fd0;
  --ins:#e3f6e8; --del:#fde8e8; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e8e8ea; --muted:#9a9aa2; --bg:#151517; --panel:#1f1f23; --line:#3a3a40; --accent:#6ea1ff;
    --near:#e0b040; --at:#ff6b6b; --cut:#b394ff; --handoff:#4cc985; --degraded:#ff6b6b; --retry:#ff9a4d; --writing:#b394ff;
    --ins:#17361f; --del:#3d1a1a; }
}
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.4em; margin: 0 0 8px; word-break: break-all; }
h2 { font-size: 1.2em; margin: 32px 0 8px; border-top: 1px solid var(--line); padding-top: 16px; }
h3 { font-size: 1.05em; margin: 24px 0 6px; }
h4 { font-size: 1em; margin: 20px 0 6px; }
h5 { font-size: .95em; margin: 12px 0 4px; color: var(--muted); }
a { color: var(--accent); }
.muted { color: var(--muted); font-weight: normal; }
.live { color: var(--handoff); margin: 0 0 8px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; word-break: break-all; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  white-space: pre-wrap; word-break: break-word; font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, "Noto Sans Mono CJK SC", monospace; }
code { font: 13px ui-monospace, "SFMono-Regular", Menlo, Consolas, "Noto Sans Mono CJK SC", monospace; }
table { border-collapse: collapse; width: 100%; font-size: .93em; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; }
.badge { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: .85em; }
.badge.degraded { background: var(--degraded); color: #fff; }
.status { font-size: .8em; padding: 1px 8px; border-radius: 10px; border: 1px solid var(--line); font-weight: normal; }
.status-succeeded { color: var(--handoff); } .status-failed, .status-generation_limit { color: var(--at); }
.status-running { color: var(--accent); }
ul.errors { margin: 4px 0; padding-left: 20px; } ul.errors li { word-break: break-word; }
figure { margin: 12px 0; } figcaption { color: var(--muted); font-size: .9em; margin-bottom: 4px; }
svg.chart { width: 100%; height: auto; display: block; background: var(--bg); }
svg.chart .plot { fill: var(--panel); stroke: var(--line); }
svg.chart .grid { stroke: var(--line); stroke-width: .5; }
svg.chart text { fill: var(--muted); font-size: 11px; font-family: inherit; }
svg.chart .th { stroke-width: 1.2; stroke-dasharray: 6 4; }
svg.chart .th.near { stroke: var(--near); } svg.chart .thl.near { fill: var(--near); }
svg.chart .th.at { stroke: var(--at); } svg.chart .thl.at { fill: var(--at); }
svg.chart .th.window { stroke: var(--muted); } svg.chart .thl.window { fill: var(--muted); }
svg.chart .mark line { stroke-width: 1.5; }
svg.chart .mark.cut line { stroke: var(--cut); stroke-dasharray: 3 3; } svg.chart .mark.cut text { fill: var(--cut); }
svg.chart .mark.handoff line { stroke: var(--handoff); } svg.chart .mark.handoff text { fill: var(--handoff); }
svg.chart .mark.degraded line { stroke: var(--degraded); stroke-width: 2.5; } svg.chart .mark.degraded text { fill: var(--degraded); font-weight: 700; }
svg.chart .mark.retry line { stroke: var(--retry); stroke-dasharray: 1 3; } svg.chart .mark.retry text { fill: var(--retry); }
svg.chart .writing-band { fill: var(--writing); opacity: .12; }
svg.chart .wait-band { fill: var(--retry); opacity: .18; }
svg.chart .mark.wait line { stroke: var(--retry); } svg.chart .mark.wait text { fill: var(--retry); }
svg.chart polyline.gen { fill: none; stroke: var(--accent); stroke-width: 1.6; }
svg.chart circle.pt { fill: var(--accent); stroke: var(--bg); stroke-width: 1; }
svg.chart circle.pt.writing { fill: var(--writing); }
svg.chart .empty { font-size: 14px; }
.legend { font-size: .85em; color: var(--muted); margin: 4px 0; }
.legend .key { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin: 0 4px 0 12px; background: var(--accent); }
.legend .key.writing { background: var(--writing); } .legend .key.cut { background: var(--cut); }
.legend .key.handoff { background: var(--handoff); } .legend .key.degraded { background: var(--degraded); height: 5px; }
.legend .key.retry, .legend .key.wait { background: var(--retry); }
section.generation { border-left: 3px solid var(--line); padding-left: 12px; margin: 16px 0; }
section.generation.degraded { border-left-color: var(--degraded); }
pre.diff span { display: block; } pre.diff .ins { background: var(--ins); } pre.diff .del { background: var(--del); text-decoration: line-through; }
footer { margin-top: 32px; font-size: .85em; }
nav { margin-bottom: 8px; }
table.runs td { vertical-align: top; }
@media print {
  :root { --fg:#000; --muted:#444; --bg:#fff; --panel:#fff; --line:#999; }
  main { max-width: none; padding: 0; }
  .live, nav { display: none; }
  section.generation, figure, pre { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
`
