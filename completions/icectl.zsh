
#compdef icectl

_icectl_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _ICECTL_COMPLETE=complete_zsh icectl)
}

compdef _icectl_completion icectl

