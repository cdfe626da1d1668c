@echo off
rem Shell completion for "kubectl placement" (kubectl 1.26 or later) on Windows:
rem kubectl finds this file on PATH by its name and runs it with the words
rem typed after "kubectl placement"; the plugin's __complete command answers.
kubectl-placement.exe __complete %*
