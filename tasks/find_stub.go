package tasks

// Find is a stand-in until the tasks helper's package lands: it finds no
// task. The lead deletes this file at merge.
func Find(dir string) ([]Task, error) { return nil, nil }

// Task is a stand-in for the tasks helper's Task.
type Task struct{ Name, Source, Command string }
