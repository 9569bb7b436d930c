"""Reports: tables, output files, plots, spreadsheets and generated documentation."""
