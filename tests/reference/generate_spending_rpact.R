# Reference values from R + rpact for Lan-DeMets alpha-spending boundaries
# (medaudit.stats.spending_bounds).
#
# Regenerate (from the repository root; Debian: apt-get install r-cran-rpact):
#     Rscript tests/reference/generate_spending_rpact.R
#
# Writes spending_rpact.csv next to this script: one row per design x look with
#   rpact::getDesignGroupSequential(kMax = K, alpha = alpha, sided = sided,
#                                   typeOfDesign = "asOF" | "asP",
#                                   informationRates = rates)
# $criticalValues (the z boundary at each look) and $alphaSpent (cumulative alpha spent).
# "asOF" is the O'Brien-Fleming-type spending function 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)),
# "asP" the Pocock-type alpha log(1 + (e - 1) t) (Lan & DeMets 1983; Kim & DeMets 1987).
# sided = 2 gives symmetric two-sided boundaries whose total type I error is alpha.
# Numbers are written with sprintf("%.17g").

suppressPackageStartupMessages(library(rpact))

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})
fmt <- function(x) sprintf("%.17g", x)

designs <- list(
  list(id = "eq1", rates = c(1)),
  list(id = "eq2", rates = c(1, 2) / 2),
  list(id = "eq3", rates = c(1, 2, 3) / 3),
  list(id = "eq5", rates = (1:5) / 5),
  list(id = "eq8", rates = (1:8) / 8),
  list(id = "eq10", rates = (1:10) / 10),
  list(id = "uneq4", rates = c(0.15, 0.4, 0.75, 1)),
  list(id = "uneq6", rates = c(0.1, 0.2, 0.35, 0.5, 0.8, 1))
)
rows <- list()
for (d in designs) {
  for (spending in c("asOF", "asP")) {
    for (sided in c(1, 2)) {
      for (alpha in c(0.025, 0.05, 0.1)) {
        if (length(d$rates) == 1) {
          # rpact needs kMax >= 2 for a spending design; one look is the fixed-sample test
          cv <- if (sided == 1) qnorm(1 - alpha) else qnorm(1 - alpha / 2)
          spent <- alpha
        } else {
          g <- getDesignGroupSequential(kMax = length(d$rates), alpha = alpha, sided = sided,
                                        typeOfDesign = spending, informationRates = d$rates)
          cv <- g$criticalValues
          spent <- g$alphaSpent
        }
        rows[[length(rows) + 1]] <- data.frame(
          design = d$id, spending = spending, sided = sided, alpha = fmt(alpha),
          look = seq_along(d$rates), information_rate = fmt(d$rates),
          critical_value = fmt(cv), alpha_spent = fmt(spent))
      }
    }
  }
}
out <- do.call(rbind, rows)
path <- file.path(script_dir, "spending_rpact.csv")
con <- file(path, "w")
writeLines(c("# Reference values produced by R + rpact; do not edit by hand.",
             paste0("# R version: ", R.version.string),
             paste0("# rpact version: ", as.character(packageVersion("rpact"))),
             paste0("# Date: ", format(Sys.Date())),
             "# Regenerate from the repository root: Rscript tests/reference/generate_spending_rpact.R"),
           con)
write.csv(out, con, row.names = FALSE, quote = FALSE)
close(con)
