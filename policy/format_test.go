package policy

import "testing"

func TestFormatUsed(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "0"},
		{950, "950"},
		{999, "999"},
		{1_000, "1.0K"},
		{1_049, "1.0K"},
		{1_050, "1.1K"},
		{130_000, "130.0K"},
		{152_000, "152.0K"},
		{152_349, "152.3K"},
		{999_949, "999.9K"},
		{999_950, "1.0M"},
		{1_000_000, "1.0M"},
		{1_250_000, "1.3M"},
		{-2_000, "-2.0K"},
	}
	for _, tt := range tests {
		if got := FormatUsed(tt.n); got != tt.want {
			t.Errorf("FormatUsed(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestFormatRound(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "0"},
		{950, "950"},
		{1_000, "1K"},
		{19_734, "20K"},
		{20_000, "20K"},
		{200_000, "200K"},
		{999_499, "999K"},
		{999_500, "1M"},
		{1_000_000, "1M"},
		{1_500_000, "1.5M"},
		{2_000_000, "2M"},
		{-2_000, "-2K"},
	}
	for _, tt := range tests {
		if got := FormatRound(tt.n); got != tt.want {
			t.Errorf("FormatRound(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestSeedStatusLines rebuilds the first two status lines of the design's
// example (DESIGN.md «Status lines») from a policy and context sizes, so the
// number formats are checked in place.
func TestSeedStatusLines(t *testing.T) {
	p := HandoffPolicy{Enabled: true, Window: 200_000, Headroom: DefaultHeadroom}
	near := "上下文 " + FormatUsed(130_000) + "/" + FormatRound(p.Window) + " · 还有约 " + FormatRound(p.At()-130_000) + " 到换代"
	if want := "上下文 130.0K/200K · 还有约 20K 到换代"; near != want {
		t.Errorf("near line = %q, want %q", near, want)
	}
	cut := "上下文 " + FormatUsed(152_000) + "/" + FormatRound(p.Window) + " —— 写交接准备换代"
	if want := "上下文 152.0K/200K —— 写交接准备换代"; cut != want {
		t.Errorf("handoff line = %q, want %q", cut, want)
	}
	restart := "新会话接手,上下文从 " + FormatUsed(152_000) + " 重新开始"
	if want := "新会话接手,上下文从 152.0K 重新开始"; restart != want {
		t.Errorf("restart line = %q, want %q", restart, want)
	}
}
