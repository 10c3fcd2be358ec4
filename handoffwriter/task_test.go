package handoffwriter

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTaskBlockWhole(t *testing.T) {
	task := "Port the parser to Go.\nPOSIX sh only; do not touch the business code.\n"
	block, whole := TaskBlock(task, "/ws/.flower/notes/任务-main.md", 8000)
	if !whole {
		t.Errorf("a short task was not carried whole")
	}
	for _, want := range []string{TaskHeading, "the task, as it was given", TaskBegin + "\n" + task + TaskEnd + "\n", "/ws/.flower/notes/任务-main.md"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "Read the whole task") {
		t.Errorf("a whole task is told to be read elsewhere:\n%s", block)
	}
	// Exactly at the limit is still whole; no trailing newline is added
	// inside the task, only before the end marker.
	exact := strings.Repeat("字", 10)
	block, whole = TaskBlock(exact, "", 10)
	if !whole || !strings.Contains(block, TaskBegin+"\n"+exact+"\n"+TaskEnd+"\n") {
		t.Errorf("a task of exactly the limit: whole=%v\n%s", whole, block)
	}
}

// Characters are runes: a CJK task is cut after limit characters, never
// inside one, and the sentence names the file to read.
func TestTaskBlockCutsByRunes(t *testing.T) {
	task := strings.Repeat("任务文本", 5000) // 20,000 runes, 60,000 bytes
	block, whole := TaskBlock(task, "/p/任务-s.md", 8000)
	if whole {
		t.Fatalf("a 20,000-character task was carried whole at limit 8,000")
	}
	if !utf8.ValidString(block) {
		t.Fatalf("the block is not valid UTF-8: a rune was cut")
	}
	_, rest, ok := strings.Cut(block, TaskBegin+"\n")
	carried, _, ok2 := strings.Cut(rest, "\n"+TaskEnd)
	if !ok || !ok2 {
		t.Fatalf("markers missing:\n%.500s", block)
	}
	if n := utf8.RuneCountInString(carried); n != 8000 || !strings.HasPrefix(task, carried) {
		t.Errorf("carried %d runes (prefix of the task: %v), want the first 8000", n, strings.HasPrefix(task, carried))
	}
	for _, want := range []string{"20,000 characters long", "first 8,000", "Read the whole task in /p/任务-s.md before you act", "the rest is in /p/任务-s.md"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q", want)
		}
	}
}

func TestTaskBlockOff(t *testing.T) {
	for _, tt := range []struct {
		task  string
		limit int
	}{{"a task", 0}, {"a task", -1}, {"", 8000}, {" \n\t", 8000}} {
		if block, whole := TaskBlock(tt.task, "/p", tt.limit); block != "" || whole {
			t.Errorf("TaskBlock(%q, %d) = %q, %v; want nothing", tt.task, tt.limit, block, whole)
		}
	}
}

func TestHandoffPromptCarryingTask(t *testing.T) {
	plain := HandoffPrompt(152_000, 200_000)
	carrying := HandoffPromptCarryingTask(152_000, 200_000)
	if !strings.HasPrefix(carrying, plain) || !strings.Contains(carrying, "exactly as the person gave it") ||
		!strings.Contains(carrying, "do not restate the task") {
		t.Errorf("the carrying prompt does not add the note:\n%s", carrying)
	}
	// With carrying off the writing turn hears nothing of it.
	for _, word := range []string{"verbatim", "word for word", "restate"} {
		if strings.Contains(strings.ToLower(plain), word) {
			t.Errorf("HandoffPrompt mentions %q", word)
		}
	}
}
