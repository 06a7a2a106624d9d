# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # §5.2 Binding generalization

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/05_2_binding_generalization.ipynb)

# %%
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "bindcore @ git+https://github.com/bindcore-book/binding-concepts",
        ],
        check=True,
    )

# %% tags=["parameters"]
profile = "quick"

# %%
print(f"profile: {profile}")
