package handoffwriter

import (
	"strings"
	"unicode/utf8"
)

// TaskHeading marks the task a successor's first prompt carries, so that
// neither the model nor a person reading the request can take it for part of
// the handoff.
const TaskHeading = "# 任务 · the task, as it was given"

// Markers around the carried task: the text between them is the person's,
// byte for byte.
const (
	TaskBegin = "<<<<<<<< the task begins"
	TaskEnd   = ">>>>>>>> the task ends"
)

// TaskCarriedNote is what HandoffPromptCarryingTask adds to the handoff
// prompt: with the task carried verbatim, the document should spend its
// words on where the work stands, not on a paraphrase of the task.
const TaskCarriedNote = `Your successor will also receive the task exactly as the person gave it, word for word, next to your document. So do not restate the task, its constraints or its acceptance criteria: in doing, name the part of the task in hand and how far it got; spend the rest of your words on where the work stands against the task.
`

// HandoffPromptCarryingTask is HandoffPrompt for a step whose task will be
// carried verbatim to the successor; HandoffPrompt itself says nothing of
// the task, as when carrying is off.
func HandoffPromptCarryingTask(used, window int) string {
	return HandoffPrompt(used, window) + "\n" + TaskCarriedNote
}

// TaskBlock is the part of a successor's first prompt that carries the task
// in the person's words, under TaskHeading and between TaskBegin and TaskEnd.
// A task of at most limit characters (runes, so a CJK task is never cut
// inside a character) goes in whole. A longer one goes in as its first limit
// characters, with a sentence telling the successor that the whole task is
// at where (a file path, or wherever else it is kept) and to read it before
// acting. where may be "" for a task carried whole. A limit <= 0 or a blank
// task gives "": nothing is carried. whole reports whether all of it went in.
func TaskBlock(task, where string, limit int) (block string, whole bool) {
	if limit <= 0 || strings.TrimSpace(task) == "" {
		return "", false
	}
	total := utf8.RuneCountInString(task)
	carried := task
	whole = total <= limit
	if !whole {
		carried = cutRunes(task, limit)
	}
	var b strings.Builder
	b.WriteString(TaskHeading + "\n\n")
	b.WriteString("Below is the task of this step in the person's own words, carried verbatim")
	if where != "" {
		b.WriteString(" from " + where)
	}
	b.WriteString(". It says what is wanted, its limits and when it is done; the handoff above says where the work stands against it. " +
		"The person may have edited it since the work began: where it and the handoff disagree about what is wanted, follow the task.\n\n")
	if !whole {
		b.WriteString("The task is " + groupDigits(total) + " characters long and only its first " + groupDigits(limit) +
			" are below. Read the whole task in " + where + " before you act.\n\n")
	}
	b.WriteString(TaskBegin + "\n")
	b.WriteString(carried)
	if !strings.HasSuffix(carried, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(TaskEnd)
	if !whole {
		b.WriteString(" here, after " + groupDigits(limit) + " of " + groupDigits(total) + " characters; the rest is in " + where)
	}
	b.WriteString("\n")
	return b.String(), whole
}
