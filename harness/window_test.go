package harness

import "testing"

func TestGuessWindow(t *testing.T) { // DESIGN.md «Window guess»
	tests := []struct {
		name string
		env  []string
		want int
	}{
		{"both unset", nil, 1_000_000},
		{"both empty", []string{"ANTHROPIC_MODEL=", "ANTHROPIC_DEFAULT_OPUS_MODEL="}, 1_000_000},
		{"other vars ignored", []string{"MODEL=claude-haiku", "CLAUDE_MODEL=haiku", "ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5"}, 1_000_000},
		{"haiku", []string{"ANTHROPIC_MODEL=claude-haiku-4-5"}, 200_000},
		{"haiku any case", []string{"ANTHROPIC_MODEL=Claude-HAIKU-4-5"}, 200_000},
		{"haiku in opus var", []string{"ANTHROPIC_DEFAULT_OPUS_MODEL=claude-3-5-haiku-20241022"}, 200_000},
		{"sonnet guesses 1M", []string{"ANTHROPIC_MODEL=claude-sonnet-4-5"}, 1_000_000},
		{"opus", []string{"ANTHROPIC_MODEL=claude-opus-5-5"}, 1_000_000},

		// the standalone word 1m
		{"bracket 1m", []string{"ANTHROPIC_MODEL=claude-opus-5[1m]"}, 1_000_000},
		{"1m beats haiku", []string{"ANTHROPIC_MODEL=claude-haiku[1m]"}, 1_000_000},
		{"upper 1M beats haiku", []string{"ANTHROPIC_MODEL=claude-haiku[1M]"}, 1_000_000},
		{"dash 1m beats haiku", []string{"ANTHROPIC_MODEL=haiku-1m"}, 1_000_000},
		{"whole name 1m", []string{"ANTHROPIC_MODEL=1m"}, 1_000_000},
		{"space 1m beats haiku", []string{"ANTHROPIC_MODEL=claude-haiku-4-5 1m"}, 1_000_000},
		{"underscore is a boundary", []string{"ANTHROPIC_MODEL=haiku_1m"}, 1_000_000},
		{"21m is not 1m", []string{"ANTHROPIC_MODEL=haiku-21m"}, 200_000},
		{"1mx is not 1m", []string{"ANTHROPIC_MODEL=claude-haiku-1mx"}, 200_000},
		{"x1m is not 1m", []string{"ANTHROPIC_MODEL=haiku-x1m"}, 200_000},
		{"letter after is not 1m", []string{"ANTHROPIC_MODEL=haiku-1mé"}, 200_000},
		{"second occurrence counts", []string{"ANTHROPIC_MODEL=haiku-21m-1m"}, 1_000_000},

		// precedence across the two variables: 1m in either, then haiku in either
		{"haiku model, 1m opus", []string{"ANTHROPIC_MODEL=claude-haiku-4-5", "ANTHROPIC_DEFAULT_OPUS_MODEL=claude-opus-5[1m]"}, 1_000_000},
		{"1m model, haiku opus", []string{"ANTHROPIC_MODEL=claude-opus-5[1m]", "ANTHROPIC_DEFAULT_OPUS_MODEL=claude-haiku-4-5"}, 1_000_000},
		{"opus model, haiku opus", []string{"ANTHROPIC_MODEL=opus", "ANTHROPIC_DEFAULT_OPUS_MODEL=claude-haiku-4-5"}, 200_000},

		// KEY=VALUE list semantics
		{"last entry wins", []string{"ANTHROPIC_MODEL=claude-haiku-4-5", "ANTHROPIC_MODEL=claude-opus-5-5"}, 1_000_000},
		{"last entry wins, other way", []string{"ANTHROPIC_MODEL=claude-opus-5-5", "ANTHROPIC_MODEL=claude-haiku-4-5"}, 200_000},
		{"later empty unsets", []string{"ANTHROPIC_MODEL=claude-haiku-4-5", "ANTHROPIC_MODEL="}, 1_000_000},
		{"entry without = ignored", []string{"ANTHROPIC_MODEL", "ANTHROPIC_MODEL=claude-haiku-4-5", "garbage"}, 200_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GuessWindow(tt.env); got != tt.want {
				t.Errorf("GuessWindow(%q) = %d, want %d", tt.env, got, tt.want)
			}
		})
	}
}
