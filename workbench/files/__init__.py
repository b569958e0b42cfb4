"""Files and processes the workbench names on disk: outputs written where a person says,
never destroying what the path named (`output_files`), and which process owns a run
(`run_owner`: a pid and its start time, which scratch files and stored runs carry)."""
