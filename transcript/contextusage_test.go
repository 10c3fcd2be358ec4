package transcript

import (
	"testing"

	"github.com/tidwall/gjson"
)

// The start-up floor is the harness's count less its messages, so an
// answer asked after the first round still gives it (answers as measured on
// the pinned harness, categories abridged).
func TestContextUsageFloor(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         int
	}{
		{"before any turn", `{"totalTokens":9614,"categories":[{"id":"system_prompt","tokens":1974},{"id":"system_tools","tokens":5552},{"id":"skills","tokens":2067},{"id":"messages","tokens":21}]}`, 9593},
		{"after a turn", `{"totalTokens":50100,"categories":[{"id":"system_prompt","tokens":1974},{"id":"system_tools","tokens":5707},{"id":"skills","tokens":2067},{"id":"messages","tokens":40352},{"id":"free_space","tokens":946900}]}`, 9748},
		{"no breakdown", `{"totalTokens":18000}`, 18000},
		{"messages above the total", `{"totalTokens":10,"categories":[{"id":"messages","tokens":20}]}`, 0},
	} {
		if got := ContextUsageOf(gjson.Parse(tc.answer)).Floor; got != tc.want {
			t.Errorf("%s: floor %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The rest of the answer: window, model, and auto-compact said or unsaid.
func TestContextUsageOf(t *testing.T) {
	u := ContextUsageOf(gjson.Parse(`{"model":"claude-x","maxTokens":200000,"totalTokens":9000,"isAutoCompactEnabled":false}`))
	if u.Model != "claude-x" || u.Window != 200000 || u.Floor != 9000 || u.AutoCompact == nil || *u.AutoCompact {
		t.Errorf("answer read as %+v", u)
	}
	if u := ContextUsageOf(gjson.Parse(`{"maxTokens":1}`)); u.AutoCompact != nil {
		t.Errorf("an answer that does not say reads auto-compact %v, want nil", *u.AutoCompact)
	}
}
