"""Code mode inside agent frameworks: each framework's native tool seam over a :class:`~toolcode.Toolbox`.

- :mod:`toolcode.integrations.pydantic_ai` (``pip install 'toolcode[pydantic-ai]'``): a Pydantic
  AI toolset of the code-mode tools, and a Pydantic AI toolset as a toolrun provider.
- :mod:`toolcode.integrations.openai_agents` (``pip install 'toolcode[openai-agents]'``): the
  code-mode tools as OpenAI Agents SDK function tools.

Each is a thin door, like the MCP server: the same tool names, descriptions, input schemas,
reply texts and error codes (:mod:`toolcode._metatools`). Importing :mod:`toolcode` imports no
framework; importing an integration without its extra raises an ``ImportError`` that says
what to install.
"""

__all__: list[str] = []
