package codexrpc

import (
	"encoding/json"
)

// The methods and notifications the client relies on.
const (
	MethodInitialize    = "initialize"
	MethodInitialized   = "initialized"
	MethodThreadStart   = "thread/start"
	MethodThreadResume  = "thread/resume"
	MethodTurnStart     = "turn/start"
	MethodTurnInterrupt = "turn/interrupt"
	MethodHooksList     = "hooks/list"

	NoteTokenUsage    = "thread/tokenUsage/updated"
	NoteTurnStarted   = "turn/started"
	NoteTurnCompleted = "turn/completed"
	NoteError         = "error"
	NoteRateLimits    = "account/rateLimits/updated"
	NoteItemStarted   = "item/started"
	NoteItemCompleted = "item/completed"

	// ItemContextCompaction is the item type of a compaction.
	ItemContextCompaction = "contextCompaction"
)

// Turn statuses of turn/completed.
const (
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// Notification is one notification: its method, its raw params, and, for
// the methods this package decodes, Value: a TokenUsage, TurnStarted, TurnCompleted,
// Error, RateLimits or Item (nil otherwise, or when the params did not
// decode; then Err says why).
type Notification struct {
	Method string
	Params json.RawMessage
	Value  any
	Err    error
}

// Tokens is one usage figure of thread/tokenUsage/updated.
type Tokens struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
}

// TokenUsage is thread/tokenUsage/updated: Last is the latest model
// request's usage (its InputTokens is the context of that round), Total
// the thread's running sum. ModelContextWindow is 0 when Codex does not
// say.
type TokenUsage struct {
	ThreadID           string
	TurnID             string
	Last               Tokens
	Total              Tokens
	ModelContextWindow int64
}

// ErrorInfo is a turn error: its message and codexErrorInfo's kind
// ("contextWindowExceeded", "unauthorized", …; for the object forms, its
// single key, e.g. "responseStreamConnectionFailed"), with the HTTP
// status those carry.
type ErrorInfo struct {
	Message    string
	Kind       string
	HTTPStatus int
}

// TurnCompleted is turn/completed.
type TurnCompleted struct {
	ThreadID string
	TurnID   string
	Status   string
	Error    *ErrorInfo
}

// TurnStarted is turn/started: a turn began, whoever started it.
type TurnStarted struct {
	ThreadID string
	TurnID   string
}

// Error is the error notification; WillRetry says Codex tries again.
type Error struct {
	ThreadID  string
	TurnID    string
	WillRetry bool
	Error     ErrorInfo
}

// Window is one rate-limit window.
type Window struct {
	UsedPercent        int   `json:"usedPercent"`
	WindowDurationMins int64 `json:"windowDurationMins"`
	ResetsAt           int64 `json:"resetsAt"`
}

// RateLimits is account/rateLimits/updated; a nil window was not reported.
type RateLimits struct {
	Primary   *Window
	Secondary *Window
}

// Item is item/started (Started) or item/completed of any item type.
type Item struct {
	Started  bool
	ThreadID string
	TurnID   string
	ID       string
	Type     string
}

type rawError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

func (e rawError) info() ErrorInfo {
	out := ErrorInfo{Message: e.Message}
	var kind string
	if json.Unmarshal(e.CodexErrorInfo, &kind) == nil {
		out.Kind = kind
		return out
	}
	var obj map[string]struct {
		HTTPStatusCode int `json:"httpStatusCode"`
	}
	if json.Unmarshal(e.CodexErrorInfo, &obj) == nil {
		for k, v := range obj {
			out.Kind, out.HTTPStatus = k, v.HTTPStatusCode
		}
	}
	return out
}

// decode turns the params of the methods this package knows into values.
func decode(method string, params json.RawMessage) Notification {
	n := Notification{Method: method, Params: params}
	var err error
	switch method {
	case NoteTokenUsage:
		n.Value, err = decodeTokenUsage(params)
	case NoteTurnCompleted:
		n.Value, err = decodeTurnCompleted(params)
	case NoteTurnStarted:
		var p struct {
			ThreadID string `json:"threadId"`
			Turn     struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			n.Value = TurnStarted{ThreadID: p.ThreadID, TurnID: p.Turn.ID}
		}
	case NoteError:
		var p struct {
			ThreadID  string   `json:"threadId"`
			TurnID    string   `json:"turnId"`
			WillRetry bool     `json:"willRetry"`
			Error     rawError `json:"error"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			n.Value = Error{ThreadID: p.ThreadID, TurnID: p.TurnID, WillRetry: p.WillRetry, Error: p.Error.info()}
		}
	case NoteRateLimits:
		var p struct {
			RateLimits RateLimits `json:"rateLimits"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			n.Value = p.RateLimits
		}
	case NoteItemStarted, NoteItemCompleted:
		var p struct {
			ThreadID string `json:"threadId"`
			TurnID   string `json:"turnId"`
			Item     struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			} `json:"item"`
		}
		if err = json.Unmarshal(params, &p); err == nil {
			n.Value = Item{Started: method == NoteItemStarted, ThreadID: p.ThreadID, TurnID: p.TurnID, ID: p.Item.ID, Type: p.Item.Type}
		}
	}
	n.Err = err
	return n
}

func decodeTokenUsage(params json.RawMessage) (any, error) {
	var p struct {
		ThreadID   string `json:"threadId"`
		TurnID     string `json:"turnId"`
		TokenUsage struct {
			Last               Tokens `json:"last"`
			Total              Tokens `json:"total"`
			ModelContextWindow *int64 `json:"modelContextWindow"`
		} `json:"tokenUsage"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	u := TokenUsage{ThreadID: p.ThreadID, TurnID: p.TurnID, Last: p.TokenUsage.Last, Total: p.TokenUsage.Total}
	if w := p.TokenUsage.ModelContextWindow; w != nil {
		u.ModelContextWindow = *w
	}
	return u, nil
}

func decodeTurnCompleted(params json.RawMessage) (any, error) {
	var p struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID     string    `json:"id"`
			Status string    `json:"status"`
			Error  *rawError `json:"error"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	t := TurnCompleted{ThreadID: p.ThreadID, TurnID: p.Turn.ID, Status: p.Turn.Status}
	if p.Turn.Error != nil {
		info := p.Turn.Error.info()
		t.Error = &info
	}
	return t, nil
}
