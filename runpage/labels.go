package runpage

// Lang selects the page's labels: "en" or "zh", as the status lines'
// --lang (package console).
type Lang string

// The languages of the labels.
const (
	LangEn Lang = "en"
	LangZh Lang = "zh"
)

// labels are the page's words in one language.
var labels = map[Lang]map[string]string{
	LangEn: {
		"title": "flower run", "run": "Run dir", "workspace": "Workspace", "started": "Started", "updated": "Updated",
		"live": "live: this page follows the run", "step": "Step", "status": "Status", "task": "The task as given",
		"cost": "Cost", "turns": "Turns", "context": "Context", "window": "window", "errors": "Errors", "none": "none",
		"chart": "Main-thread context at every API response", "near": "near notice", "at": "handoff",
		"cut": "cut", "writing": "writing turn", "handoff": "handoff", "degraded": "degraded", "retry": "retry",
		"gens": "Generations", "gen": "Generation", "session": "Session", "ctxAtHandoff": "Context at handoff",
		"outcome": "Outcome", "document": "The handoff as written", "edit": "The person's edit (as written → as launched)",
		"receipt": "Receipt", "noGens": "no generations yet", "noResponses": "no API response recorded yet",
		"responses": "responses", "attempts": "Failed attempts", "model": "Model", "ended": "Ended", "why": "why",
		"legendWorking": "working turn", "runs": "Runs", "noRuns": "no runs yet", "steps": "Steps",
		"skipped": "log lines skipped (not records)", "limit": "waiting for a limit", "apiRetry": "API retry",
	},
	LangZh: {
		"title": "flower 运行", "run": "运行目录", "workspace": "工作区", "started": "开始", "updated": "更新",
		"live": "运行中:本页随运行更新", "step": "步骤", "status": "状态", "task": "原始任务",
		"cost": "花费", "turns": "轮数", "context": "上下文", "window": "窗口", "errors": "错误", "none": "无",
		"chart": "主线程每次 API 响应时的上下文", "near": "临近提示", "at": "换代线",
		"cut": "截断", "writing": "写交接", "handoff": "交接", "degraded": "交接降级", "retry": "重试",
		"gens": "各代", "gen": "代", "session": "会话", "ctxAtHandoff": "交接时上下文",
		"outcome": "结果", "document": "写下的交接", "edit": "人的修改(写下 → 启动时读到)",
		"receipt": "回执", "noGens": "还没有代", "noResponses": "还没有记录到 API 响应",
		"responses": "次响应", "attempts": "失败尝试", "model": "模型", "ended": "结束", "why": "原因",
		"legendWorking": "干活的轮次", "runs": "运行", "noRuns": "还没有运行", "steps": "步骤",
		"skipped": "日志中跳过的行(不是记录)", "limit": "等待限额", "apiRetry": "API 重试",
	},
}

// ParseLang accepts "en" or "zh".
func ParseLang(s string) (Lang, bool) {
	l := Lang(s)
	_, ok := labels[l]
	return l, ok
}

func (l Lang) label(key string) string {
	if s, ok := labels[l][key]; ok {
		return s
	}
	return labels[LangEn][key]
}

// Label returns the labels of lang, for pages made elsewhere (the index of
// flower ui).
func Label(lang Lang) func(string) string { return lang.label }
